// CSV tables (data/table_import.hpp, hpctrain-data import-csv): the bytes as a file, read with the
// last column as classes, as regression targets, and with a column named "y" as the label.
#include "fuzz_target.hpp"
#include "hpctrain/data/table_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  const std::string path = fuzz::as_file("csv", "table.csv", data, size);
  for (const CsvOptions& o : {CsvOptions{path, {}, false}, CsvOptions{path, {}, true}, CsvOptions{path, {"y"}, false}})
    fuzz::expect_refusal_only("read_csv", [&] { (void)read_csv(o); });
  return 0;
}
