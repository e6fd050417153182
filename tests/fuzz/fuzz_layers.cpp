// The model description ([model] layers, layers/registry.hpp parse_layers), each layer made by the
// registry and its output shape inferred from a small image, a token window and a volume: any
// text is layers or one hpctrain::Error. (Nothing is allocated: parameter shapes only.)
#include "fuzz_target.hpp"
#include "hpctrain/layers/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  static const LayerRegistry registry = [] {
    LayerRegistry r;
    register_builtin_layers(r);
    return r;
  }();
  const std::string layers = fuzz::text(data, size);
  fuzz::expect_refusal_only("parse_layers", [&] {
    const std::vector<LayerArgs> args = parse_layers(layers);
    for (const Shape& input : {Shape{3, 8, 8}, Shape{16}, Shape{2, 8, 8, 8}}) {
      try {
        Shape s = input;
        for (const LayerArgs& a : args) {
          const std::unique_ptr<Layer> l = registry.make(a);
          const Shape out = l->output_shape(s);  // (not configure: it sets up backend primitives)
          std::int64_t params = 0;
          for (const ParamSpec& p : l->param_specs(s)) params += numel(p.shape);
          (void)params;
          s = out;
        }
      } catch (const Error&) {  // (a shape that does not fit: try the next input)
      }
    }
  });
  return 0;
}
