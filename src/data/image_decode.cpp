// Decoding JPEG (libjpeg-turbo) and PNG (libpng) files, and Pillow's antialiased bilinear
// resize, for hpctrain-data import-images (data/image_import.hpp).
#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

// (jpeglib.h needs size_t and FILE declared before it)
#include <jpeglib.h>
#include <png.h>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/image_import.hpp"

namespace hpctrain {

namespace {

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": cannot open");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// libjpeg reports errors through error_exit, which must not return: jump back with the text.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char text[JMSG_LENGTH_MAX];
};
void jpeg_fail(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->text);
  std::longjmp(e->jump, 1);
}

void jpeg_quiet(j_common_ptr) {}  // (warnings such as "Premature end of JPEG file": not printed)

// Pillow's bound (Image.MAX_IMAGE_PIXELS twice: its DecompressionBombError): a file of a few
// bytes can say it holds 100,000 x 100,000 pixels, 30 GB to decode into.
constexpr double kMaxPixels = 2 * 89478485.0;

bool too_many_pixels(double width, double height, char* why) {
  if (width * height <= kMaxPixels) return false;
  std::snprintf(why, JMSG_LENGTH_MAX, "%.0f x %.0f pixels, over Pillow's bound of %.0f (a decompression bomb?)", width,
                height, kMaxPixels);
  return true;
}

// (No C++ object with a destructor lives in this function: longjmp skips destructors.)
bool decode_jpeg_into(const std::vector<unsigned char>& data, Image& out, char* why) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.output_message = jpeg_quiet;
  if (setjmp(err.jump)) {
    std::snprintf(why, JMSG_LENGTH_MAX, "%s", err.text);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (too_many_pixels(cinfo.image_width, cinfo.image_height, why)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out.width = static_cast<int>(cinfo.output_width);
  out.height = static_cast<int>(cinfo.output_height);
  out.channels = 3;
  out.pixels.resize(static_cast<std::size_t>(out.width) * out.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<std::size_t>(cinfo.output_scanline) * out.width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

Image decode_png(const std::vector<unsigned char>& data, const std::string& path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, data.data(), data.size()))
    throw bad_input(path + ": not a readable PNG: " + image.message);
  char why[JMSG_LENGTH_MAX] = {};
  if (too_many_pixels(image.width, image.height, why)) {
    png_image_free(&image);
    throw bad_input(path + ": " + why);
  }
  image.format = PNG_FORMAT_RGB;  // (gray replicated; alpha composited onto black)
  Image out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.channels = 3;
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    throw bad_input(path + ": PNG does not decode: " + message);
  }
  return out;
}

}  // namespace

Image decode_image(const std::string& path, int channels) {
  const std::vector<unsigned char> data = read_file(path);
  Image rgb;
  static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (data.size() >= 8 && std::memcmp(data.data(), png_magic, 8) == 0) {
    rgb = decode_png(data, path);
  } else if (data.size() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    char why[JMSG_LENGTH_MAX] = {};
    if (!decode_jpeg_into(data, rgb, why)) throw bad_input(path + ": JPEG does not decode: " + why);
  } else {
    throw bad_input(path + ": neither a JPEG nor a PNG file (by its first bytes)");
  }
  if (rgb.width < 1 || rgb.height < 1) throw bad_input(path + ": an empty image");
  if (channels == 3) return rgb;
  Image gray{rgb.width, rgb.height, 1, std::vector<unsigned char>(rgb.pixels.size() / 3)};
  for (std::size_t i = 0; i < gray.pixels.size(); ++i) {  // Pillow's convert("L"): ITU-R 601-2 luma
    const unsigned char* p = &rgb.pixels[3 * i];
    gray.pixels[i] = static_cast<unsigned char>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
  }
  return gray;
}

namespace {

constexpr int kPrecision = 32 - 8 - 2;  // Pillow's fixed-point bits for 8-bit images

// The integer weights of each output position over the input: Pillow's precompute_coeffs and
// normalize_coeffs_8bpc for the bilinear (triangle) filter.
struct Coefficients {
  std::vector<int> first, count;
  std::vector<std::vector<int>> weights;
};
Coefficients coefficients(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0), support = filter_scale;
  Coefficients c;
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    std::vector<double> w;
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      const double t = std::fabs((x - center + 0.5) / filter_scale);
      w.push_back(t < 1 ? 1 - t : 0);
      sum += w.back();
    }
    std::vector<int> fixed;
    for (double v : w) {
      const double k = sum != 0 ? v / sum : 0;
      fixed.push_back(static_cast<int>(k < 0 ? -0.5 + k * (1 << kPrecision) : 0.5 + k * (1 << kPrecision)));
    }
    c.first.push_back(lo);
    c.count.push_back(hi - lo);
    c.weights.push_back(std::move(fixed));
  }
  return c;
}

unsigned char clip8(long long v) {
  v >>= kPrecision;
  return static_cast<unsigned char>(v < 0 ? 0 : v > 255 ? 255 : v);
}

}  // namespace

Image resize_bilinear(const Image& in, int width, int height) {
  const int ch = in.channels;
  Image mid{width, in.height, ch, std::vector<unsigned char>(static_cast<std::size_t>(width) * in.height * ch)};
  if (width == in.width) {
    mid = in;
  } else {
    const Coefficients h = coefficients(in.width, width);
    for (int y = 0; y < in.height; ++y)
      for (int x = 0; x < width; ++x)
        for (int k = 0; k < ch; ++k) {
          long long s = 1LL << (kPrecision - 1);
          for (int i = 0; i < h.count[x]; ++i)
            s += static_cast<long long>(in.pixels[(static_cast<std::size_t>(y) * in.width + h.first[x] + i) * ch + k]) *
                 h.weights[x][i];
          mid.pixels[(static_cast<std::size_t>(y) * width + x) * ch + k] = clip8(s);
        }
  }
  if (height == in.height) return mid;
  Image out{width, height, ch, std::vector<unsigned char>(static_cast<std::size_t>(width) * height * ch)};
  const Coefficients v = coefficients(in.height, height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int k = 0; k < ch; ++k) {
        long long s = 1LL << (kPrecision - 1);
        for (int i = 0; i < v.count[y]; ++i)
          s += static_cast<long long>(mid.pixels[(static_cast<std::size_t>(v.first[y] + i) * width + x) * ch + k]) *
               v.weights[y][i];
        out.pixels[(static_cast<std::size_t>(y) * width + x) * ch + k] = clip8(s);
      }
  return out;
}

std::vector<unsigned char> resize_center_crop(const Image& in, int size) {
  const bool wide = in.width >= in.height;
  const int short_side = wide ? in.height : in.width, long_side = wide ? in.width : in.height;
  const int scaled = std::max(size, static_cast<int>(static_cast<long long>(size) * long_side / short_side));
  const Image r = resize_bilinear(in, wide ? scaled : size, wide ? size : scaled);
  // (lrint: ties to even, as torchvision's round() in CenterCrop)
  const int left = static_cast<int>(std::lrint((r.width - size) / 2.0));
  const int top = static_cast<int>(std::lrint((r.height - size) / 2.0));
  std::vector<unsigned char> chw(static_cast<std::size_t>(in.channels) * size * size);
  for (int k = 0; k < in.channels; ++k)
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x)
        chw[(static_cast<std::size_t>(k) * size + y) * size + x] =
            r.pixels[(static_cast<std::size_t>(top + y) * r.width + left + x) * in.channels + k];
  return chw;
}

}  // namespace hpctrain
