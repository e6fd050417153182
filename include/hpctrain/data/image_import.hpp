// Importing a folder of JPEG and PNG images (hpctrain-data import-images): decoded with
// libjpeg-turbo and libpng, resized so the shorter side is `size` (antialiased bilinear, as
// Pillow's resize(BILINEAR)), center-cropped to size x size, and stored as uint8 [C, size,
// size] samples with scale 1/255 (docs/datasets.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hpctrain/data/table_import.hpp"  // SplitShard

namespace hpctrain {

struct Image {
  int width = 0, height = 0, channels = 0;  // pixels are [height, width, channels]
  std::vector<unsigned char> pixels;
};

// A JPEG or PNG file (told by its first bytes) as 8-bit RGB (channels = 3) or luma (1, as
// Pillow's convert("L")); bad_input naming the file when it is neither or does not decode.
Image decode_image(const std::string& path, int channels);
// Pillow's resize((width, height), BILINEAR): a triangle filter widened by the scale when
// shrinking, horizontal pass first, each pass rounded to 8 bits.
Image resize_bilinear(const Image& in, int width, int height);
// The shorter side to `size` (the longer in proportion, truncated), then the centre size x size
// (torchvision's Resize(size) then CenterCrop(size)), as [channels, size, size].
std::vector<unsigned char> resize_center_crop(const Image& in, int size);

// One image of the import: its file and class.
struct LabeledImage {
  std::string path;
  std::int32_t label = 0;
};
struct ImageList {
  std::vector<LabeledImage> images;
  std::vector<std::string> class_names;  // id = position
};
// DIR/<class>/*.{jpg,jpeg,png} (classes: the subfolders' names, sorted), or, with `labels_csv`,
// its rows "file,label" (a header row first; files relative to DIR; labels integers or names).
ImageList list_images(const std::string& dir, const std::string& labels_csv);

struct ImageImportOptions {
  std::string dir, labels_csv, out;
  int size = 32, channels = 3;
  double val_fraction = 0.1, test_fraction = 0;
  std::uint64_t shuffle_seed = 1;  // 0: the listing's order
  int shards = 1;                  // train shards (val and test: one each)
  int rank = 0, ranks = 1;         // this process writes the shards k with k % ranks == rank
  bool force = false;
  // Called now and then with this rank's images done, its total and the seconds so far.
  std::function<void(std::int64_t, std::int64_t, double)> progress;
};
// Shard k of a split: its rows of the shuffled list. Every rank computes the same plan.
using ImageShard = SplitShard;
std::vector<ImageShard> plan_image_shards(std::int64_t n, const ImageImportOptions& o);
// Writes this rank's shards of the plan (the split folders must be ready: prepare_split_dir).
// Returns the images this rank wrote.
std::int64_t write_image_shards(const ImageList& list, const std::vector<ImageShard>& plan,
                                const ImageImportOptions& o);

}  // namespace hpctrain
