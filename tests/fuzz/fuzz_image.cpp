// Images from elsewhere (data/image_import.hpp, hpctrain-data import-images): the bytes as a file,
// decoded by decode_image as RGB and as luma (libjpeg-turbo and libpng behind hpctrain's error
// handling), each then resized and center-cropped to 7 x 7 (an odd size: both filter directions).
#include "fuzz_target.hpp"
#include "hpctrain/data/image_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  const std::string path = fuzz::as_file("image", "image", data, size);
  for (const int channels : {3, 1})
    fuzz::expect_refusal_only("decode_image", [&] {
      const Image image = decode_image(path, channels);
      if (resize_center_crop(image, 7).size() != static_cast<std::size_t>(7 * 7 * channels)) {
        std::fprintf(stderr, "fuzz image: the crop is not 7 x 7 x %d\n", channels);
        std::abort();
      }
    });
  return 0;
}
