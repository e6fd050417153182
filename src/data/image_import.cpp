// Listing, splitting and writing an image folder as dataset shards (data/image_import.hpp).
#include "hpctrain/data/image_import.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/shard_writer.hpp"
#include "hpctrain/data/table_import.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {

bool is_image(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

ImageList from_csv(const std::string& dir, const std::string& csv) {
  std::ifstream in(csv);
  if (!in) throw bad_input(csv + ": cannot open");
  std::string line;
  std::getline(in, line);  // the header row
  ImageList list;
  std::vector<std::string> labels;
  for (int n = 2; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto comma = line.rfind(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 == line.size())
      throw bad_input(csv + ":" + std::to_string(n) + ": expected 'file,label', got '" + line + "'");
    const fs::path file = fs::path(dir) / line.substr(0, comma);
    if (!fs::is_regular_file(file)) throw bad_input(csv + ":" + std::to_string(n) + ": no file " + file.string());
    list.images.push_back({file.string(), 0});
    labels.push_back(line.substr(comma + 1));
  }
  std::vector<std::int32_t> ids;
  list.class_names = number_classes(labels, csv, ids);
  for (std::size_t i = 0; i < ids.size(); ++i) list.images[i].label = ids[i];
  return list;
}

}  // namespace

ImageList list_images(const std::string& dir, const std::string& labels_csv) {
  if (!fs::is_directory(dir)) throw bad_input(dir + ": not a folder");
  ImageList list;
  if (!labels_csv.empty()) {
    list = from_csv(dir, labels_csv);
  } else {
    std::vector<fs::path> classes;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory()) classes.push_back(e.path());
    std::sort(classes.begin(), classes.end());
    for (const auto& c : classes) {
      std::vector<std::string> files;
      for (const auto& e : fs::directory_iterator(c))
        if (e.is_regular_file() && is_image(e.path())) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) list.images.push_back({f, static_cast<std::int32_t>(list.class_names.size())});
      list.class_names.push_back(c.filename().string());
    }
  }
  if (list.images.empty())
    throw bad_input(dir + ": no .jpg, .jpeg or .png images in class subfolders (DIR/<class>/*.jpg) or --labels CSV");
  return list;
}

std::vector<ImageShard> plan_image_shards(std::int64_t n, const ImageImportOptions& o) {
  return plan_split_shards(n, o.val_fraction, o.test_fraction, o.shuffle_seed, "images", o.shards, 1);
}

std::int64_t write_image_shards(const ImageList& list, const std::vector<ImageShard>& plan,
                                const ImageImportOptions& o) {
  ShardSpec spec;
  spec.sample_shape = {o.channels, o.size, o.size};
  spec.type = SampleType::u8;
  spec.num_classes = std::max<std::int64_t>(
      static_cast<std::int64_t>(list.class_names.size()),
      1 + std::max_element(list.images.begin(), list.images.end(), [](const auto& a, const auto& b) {
            return a.label < b.label;
          })->label);
  spec.norm_a = {1.0 / 255};
  spec.norm_b = {0.0};
  spec.chunk_rows = 64;
  ImportProgress progress(plan, o.rank, o.ranks, o.progress);
  for (std::size_t k = 0; k < plan.size(); ++k) {
    if (!progress.mine(k)) continue;
    const ImageShard& sh = plan[k];
    char name[32];
    std::snprintf(name, sizeof(name), "part-%05d.h5", sh.index);
    ShardWriter w((fs::path(o.out) / sh.split / name).string(), spec, static_cast<std::int64_t>(sh.rows.size()));
    std::vector<unsigned char> samples;  // (a block of 256 images at a time: memory stays small)
    std::vector<std::int32_t> labels;
    for (std::size_t i = 0; i < sh.rows.size(); ++i) {
      const LabeledImage& im = list.images[static_cast<std::size_t>(sh.rows[i])];
      const auto chw = resize_center_crop(decode_image(im.path, o.channels), o.size);
      samples.insert(samples.end(), chw.begin(), chw.end());
      labels.push_back(im.label);
      if (labels.size() == 256 || i + 1 == sh.rows.size()) {
        w.append(static_cast<std::int64_t>(labels.size()), samples.data(), labels.data());
        samples.clear();
        labels.clear();
      }
      progress.tick();
    }
    w.close();
  }
  return progress.done();
}

}  // namespace hpctrain
