// A dataset index as text and back (data/dataset.hpp: serialize, deserialize_dataset_index): rank
// 0 scans the shards, the other ranks receive the index this way.
#include <iomanip>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/dataset.hpp"

namespace hpctrain {

namespace {
void write_split(std::ostream& os, const SplitIndex& s) {
  os << "split " << std::quoted(s.name) << ' ' << s.total << ' ' << static_cast<int>(s.sample_type) << ' '
     << s.classification << ' ' << s.label_width << ' ' << s.num_classes << ' ' << s.sample_shape.size();
  for (auto d : s.sample_shape) os << ' ' << d;
  os << ' ' << s.scale.size();
  for (std::size_t i = 0; i < s.scale.size(); ++i) os << ' ' << s.scale[i] << ' ' << s.offset[i];
  os << ' ' << s.tokens << ' ' << s.stream_tokens << ' ' << s.block_size << ' ' << s.token_bits << ' '
     << static_cast<int>(s.token_format) << ' ' << std::quoted(s.tokenizer) << ' ' << std::quoted(s.vocabulary) << ' '
     << std::quoted(s.target_names) << ' ' << s.log1p << ' ' << s.max_id << ' ' << s.tokenizer_files.size();
  for (const auto& [name, bytes] : s.tokenizer_files) os << ' ' << std::quoted(name) << ' ' << std::quoted(bytes);
  os << ' ' << s.shards.size() << '\n';
  for (const auto& sh : s.shards)
    os << std::quoted(sh.path) << ' ' << sh.rows << ' ' << sh.first << ' ' << sh.chunk_rows << ' '
       << std::quoted(sh.compression) << '\n';
}

SplitIndex read_split(std::istream& is) {
  SplitIndex s;
  std::string tag;
  int type = 0;
  std::size_t dims = 0, channels = 0, shards = 0;
  is >> tag >> std::quoted(s.name) >> s.total >> type >> s.classification >> s.label_width >> s.num_classes >> dims;
  HPCT_CHECK(tag == "split", "bad dataset index text");
  s.sample_type = static_cast<SampleType>(type);
  s.sample_shape.resize(dims);
  for (auto& d : s.sample_shape) is >> d;
  is >> channels;
  s.scale.resize(channels);
  s.offset.resize(channels);
  for (std::size_t i = 0; i < channels; ++i) is >> s.scale[i] >> s.offset[i];
  std::size_t files = 0;
  int format = 0;
  is >> s.tokens >> s.stream_tokens >> s.block_size >> s.token_bits >> format >> std::quoted(s.tokenizer) >>
      std::quoted(s.vocabulary) >> std::quoted(s.target_names) >> s.log1p >> s.max_id >> files;
  s.token_format = static_cast<DataFormat>(format);
  s.tokenizer_files.resize(files);
  for (auto& [name, bytes] : s.tokenizer_files) is >> std::quoted(name) >> std::quoted(bytes);
  is >> shards;
  s.shards.resize(shards);
  for (auto& sh : s.shards)
    is >> std::quoted(sh.path) >> sh.rows >> sh.first >> sh.chunk_rows >> std::quoted(sh.compression);
  HPCT_CHECK(!is.fail(), "truncated dataset index text");
  return s;
}
}  // namespace

std::string serialize(const DatasetIndex& index) {
  std::ostringstream os;
  os << std::setprecision(9) << std::quoted(index.root) << ' ' << index.val.has_value() << ' ' << index.test.has_value()
     << '\n';
  write_split(os, index.train);
  if (index.val) write_split(os, *index.val);
  if (index.test) write_split(os, *index.test);
  return os.str();
}

DatasetIndex deserialize_dataset_index(const std::string& text) {
  std::istringstream is(text);
  DatasetIndex index;
  bool val = false, test = false;
  is >> std::quoted(index.root) >> val >> test;
  index.train = read_split(is);
  if (val) index.val = read_split(is);
  if (test) index.test = read_split(is);
  return index;
}

}  // namespace hpctrain
