// Configuration parsing: defaults, types, overrides, ${VAR} expansion, and one
// test per kind of error message (file, line, key, value, what is allowed).
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "hpctrain/config/config.hpp"
#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/config/schema.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/train/trainer.hpp"

using namespace hpctrain;

namespace {

EnvLookup fake_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (name == "SLURM_JOB_ID") return std::string("4242");
    if (name == "SCRATCH") return std::string("/scratch/u1");
    return std::nullopt;
  };
}

Config parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return parse_config(text, "test.ini", sets, fake_env());
}

// The bad_input message for `text`, or "" when it parses.
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse(text, sets);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_EQ(e.scope(), Scope::every_rank);
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "error must be one line: " << msg;
    return msg;
  }
  return "";
}

}  // namespace

TEST(Config, EmptyFileGivesDocumentedDefaults) {
  const Config c = parse("");
  EXPECT_EQ(c.run.seed, 42u);
  EXPECT_EQ(c.run.device, DeviceKind::auto_);
  EXPECT_EQ(c.train.global_batch, 64);
  EXPECT_EQ(c.train.epochs, 1);
  EXPECT_EQ(c.parallel.pipeline_parallel, 1);
  EXPECT_EQ(c.parallel.comm, CommBackend::auto_);
  EXPECT_DOUBLE_EQ(c.parallel.watchdog_s, 300.0);
  EXPECT_EQ(c.data.cache_bytes, 2ull << 30);
  EXPECT_EQ(c.checkpoint.resume.kind, ResumeFrom::Kind::auto_);
  // Every schema key but the old names is resolved, from its default.
  std::size_t current = 0;
  for (const auto& k : config_schema()) current += k.renamed_to.empty() ? 1 : 0;
  EXPECT_EQ(current + 16, config_schema().size());  // the old names (OldKeyNamesWorkWithAWarning, ...)
  EXPECT_EQ(c.resolved.size(), current);
  for (const auto& k : c.resolved) EXPECT_EQ(k.source, "default") << k.name;
}

TEST(Config, SectionsMapToStructs) {
  const Config c = parse(
      "# comment\n[run]\nseed = 7\ndevice = cpu\n[precision]\ndtype = bf16\n[kernels]\nthreads = 4\n"
      "[data]\npath = /data/mnist\nshuffle = chunk\nlast_batch = wrap\ncache_bytes = 512M\n"
      "[model]\nlayers = dense(10) relu\n"
      "[train]\nglobal_batch = 256\nmicro_batches = 4\nsteps = 100\nepochs = 0\nsync_batchnorm = off\n"
      "[optim]\nname = adamw\nlr = 3e-4\nbetas = 0.8, 0.95\nschedule = cosine\nwarmup_steps = 10\n"
      "[parallel]\npipeline_parallel = 2\npipeline_schedule = gpipe\ncomm = mpi\ncuda_aware_mpi = off\nwatchdog_s = "
      "12.5\n"
      "[checkpoint]\nevery_steps = 50\nkeep = 2\nresume = none\n");
  EXPECT_EQ(c.run.seed, 7u);
  EXPECT_EQ(c.run.device, DeviceKind::cpu);
  EXPECT_EQ(c.precision.dtype, Precision::bf16);
  EXPECT_EQ(c.kernels.threads, 4);
  EXPECT_EQ(c.data.path, "/data/mnist");
  EXPECT_EQ(c.data.shuffle, Shuffle::chunk);
  EXPECT_EQ(c.data.last_batch, LastBatch::wrap);
  EXPECT_EQ(c.data.cache_bytes, 512ull << 20);
  EXPECT_EQ(c.model.layers, "dense(10) relu");
  EXPECT_EQ(c.train.global_batch, 256);
  EXPECT_EQ(c.train.micro_batches, 4);
  EXPECT_EQ(c.train.steps, 100);
  EXPECT_FALSE(c.train.sync_batchnorm);
  EXPECT_EQ(c.optim.name, OptimizerName::adamw);
  EXPECT_DOUBLE_EQ(c.optim.lr, 3e-4);
  EXPECT_DOUBLE_EQ(c.optim.beta1, 0.8);
  EXPECT_DOUBLE_EQ(c.optim.beta2, 0.95);
  EXPECT_EQ(c.optim.schedule, LrSchedule::cosine);
  EXPECT_EQ(c.parallel.pipeline_parallel, 2);
  EXPECT_EQ(c.parallel.pipeline_schedule, PipelineSchedule::gpipe);
  EXPECT_EQ(c.parallel.comm, CommBackend::mpi);
  EXPECT_EQ(c.parallel.cuda_aware_mpi, Tristate::off);
  EXPECT_DOUBLE_EQ(c.parallel.watchdog_s, 12.5);
  EXPECT_EQ(c.checkpoint.every_steps, 50);
  EXPECT_EQ(c.checkpoint.resume.kind, ResumeFrom::Kind::none);
  EXPECT_EQ(c.resolved_value("optim.lr"), "3e-04");  // shortest text that reads back exactly
}

TEST(Config, OverridesWinAndAreRecorded) {
  const Config c = parse("[train]\nglobal_batch = 32\n", {"train.global_batch=128", "run.seed = 9"});
  EXPECT_EQ(c.train.global_batch, 128);
  EXPECT_EQ(c.run.seed, 9u);
  for (const auto& k : c.resolved) {
    if (k.name == "train.global_batch" || k.name == "run.seed") {
      EXPECT_EQ(k.source, "--set") << k.name;
    }
  }
}

// The keys renamed with the process mesh: the old names keep working, with one warning each;
// --set wins whichever name it uses; both names in one file is an error naming both.
TEST(Config, OldKeyNamesWorkWithAWarning) {
  const Config c = parse("[parallel]\nmodel_parallel = 2\nschedule = gpipe\n");
  EXPECT_EQ(c.parallel.pipeline_parallel, 2);
  EXPECT_EQ(c.parallel.pipeline_schedule, PipelineSchedule::gpipe);
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_EQ(c.warnings[0],
            "test.ini:2: [parallel] model_parallel is now called [parallel] pipeline_parallel (same meaning); the old "
            "name still works");
  EXPECT_EQ(c.resolved_value("parallel.pipeline_parallel"), "2");
  for (const auto& k : c.resolved) EXPECT_NE(k.name, "parallel.model_parallel");
  EXPECT_TRUE(parse("[parallel]\npipeline_parallel = 2\n").warnings.empty());
  const Config o = parse("[parallel]\nmodel_parallel = 2\n", {"parallel.pipeline_parallel=4"});
  EXPECT_EQ(o.parallel.pipeline_parallel, 4);
  EXPECT_EQ(parse("[parallel]\npipeline_parallel = 2\n", {"parallel.model_parallel=1"}).parallel.pipeline_parallel, 1);
  EXPECT_EQ(error_of("[parallel]\npipeline_parallel = 2\nmodel_parallel = 2\n"),
            "test.ini:3: key 'parallel.model_parallel' is given twice ([parallel] pipeline_parallel is its new name)");
  EXPECT_EQ(current_key_name("parallel.schedule"), "parallel.pipeline_schedule");
  EXPECT_EQ(current_key_name("optim.schedule"), "optim.schedule");
}

// [parallel] shard_optimizer (a boolean) became [parallel] shard = none | optimizer | gradients:
// true and false (and the other boolean spellings) still work, with a warning saying what they
// are now; other values are refused naming the key; both keys in one file is an error.
TEST(Config, ShardOptimizerIsReadAsShardWithAWarning) {
  EXPECT_EQ(parse("").parallel.shard, Sharding::none);
  EXPECT_EQ(parse("[parallel]\nshard = gradients\n").parallel.shard, Sharding::gradients);
  const Config c = parse("[parallel]\nshard_optimizer = true\n");
  EXPECT_EQ(c.parallel.shard, Sharding::optimizer);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(
      c.warnings[0],
      "test.ini:2: [parallel] shard_optimizer = true is now [parallel] shard = optimizer; the old key still works");
  EXPECT_EQ(c.resolved_value("parallel.shard"), "optimizer");
  for (const auto& k : c.resolved) EXPECT_NE(k.name, "parallel.shard_optimizer");
  EXPECT_EQ(parse("[parallel]\nshard_optimizer = off\n").parallel.shard, Sharding::none);
  EXPECT_EQ(parse("", {"parallel.shard_optimizer=1"}).parallel.shard, Sharding::optimizer);
  EXPECT_EQ(error_of("[parallel]\nshard_optimizer = maybe\n"),
            "test.ini:2: [parallel] shard_optimizer = 'maybe': expected one of 0|1|false|no|off|on|true|yes");
  EXPECT_EQ(parse("[parallel]\nshard = full\n").parallel.shard, Sharding::full);
  EXPECT_EQ(error_of("[parallel]\nshard = all\n"),
            "test.ini:2: [parallel] shard = 'all': expected one of none|optimizer|gradients|full");
  EXPECT_EQ(error_of("[parallel]\nshard = none\nshard_optimizer = true\n"),
            "test.ini:3: key 'parallel.shard_optimizer' is given twice ([parallel] shard is its new name)");
}

// The keys regrouped into [precision], [kernels] and [log] (issue 32): every old spelling sets the
// new field, with a warning naming the new key; the resolved list and effective_ini use only the
// new names.
TEST(Config, RegroupedKeysReadTheirOldSpellingsWithAWarning) {
  const Config c = parse(
      "[run]\nprecision = fp16\ntf32 = true\ncpu_gemm = onednn\nconv = im2col\nfusion = false\n"
      "cuda_graphs = true\nthreads = 3\n[optim]\nloss_scale = 1024\nloss_scale_window = 7\n"
      "[train]\nlog_every = 5\nmetrics_file = m.csv\ntensorboard = false\n");
  EXPECT_EQ(c.precision.dtype, Precision::fp16);
  EXPECT_TRUE(c.precision.tf32);
  EXPECT_DOUBLE_EQ(c.precision.loss_scale, 1024);
  EXPECT_EQ(c.precision.loss_scale_window, 7);
  EXPECT_EQ(c.kernels.cpu_gemm, CpuGemmLib::onednn);
  EXPECT_EQ(c.kernels.conv, ConvImpl::im2col);
  EXPECT_FALSE(c.kernels.fusion);
  EXPECT_TRUE(c.kernels.cuda_graphs);
  EXPECT_EQ(c.kernels.threads, 3);
  EXPECT_EQ(c.log.log_every, 5);
  EXPECT_EQ(c.log.metrics_file, "m.csv");
  EXPECT_FALSE(c.log.tensorboard);
  ASSERT_EQ(c.warnings.size(), 12u);
  EXPECT_EQ(c.warnings[0],
            "test.ini:2: [run] precision is now called [precision] dtype (same meaning); the old name still works");
  EXPECT_EQ(c.warnings[11],
            "test.ini:15: [train] tensorboard is now called [log] tensorboard (same meaning); the old name still "
            "works");
  const std::string ini = effective_ini(c);
  EXPECT_NE(ini.find("[precision]\ndtype = fp16\ntf32 = true\nloss_scale = 1024\nloss_scale_window = 7\n"),
            std::string::npos)
      << ini;
  EXPECT_EQ(ini.find("[run]\nseed = 42\ndevice = auto\nshare_gpus = false\nmemory_budget = 0\n"), 0u) << ini;
  // The new spellings, and the same run from either.
  const Config n = parse(
      "[precision]\ndtype = fp16\ntf32 = true\nloss_scale = 1024\nloss_scale_window = 7\n[kernels]\n"
      "cpu_gemm = onednn\nconv = im2col\nfusion = false\ncuda_graphs = true\nthreads = 3\n[log]\nlog_every = 5\n"
      "metrics_file = m.csv\ntensorboard = false\n");
  EXPECT_TRUE(n.warnings.empty());
  EXPECT_EQ(effective_ini(n), ini);
  EXPECT_EQ(error_of("[run]\nthreads = 2\n[kernels]\nthreads = 2\n"),
            "test.ini:4: key 'kernels.threads' is given twice");
  EXPECT_EQ(parse("", {"run.precision=bf16"}).precision.dtype, Precision::bf16);
}

// A key's default is stated once, as its field's initializer: the schema's default text is read off
// Config{}, is canonical, and parsing an empty file gives every field of Config{}.
TEST(ConfigSchema, DefaultsComeFromTheStructsAndReadBack) {
  const Config defaults;
  const Config parsed = parse("");
  for (const KeySpec& s : config_schema()) {
    if (!s.renamed_to.empty()) continue;
    if (s.name() != "checkpoint.dir") {  // (filled in from out_dir)
      EXPECT_EQ(s.show(parsed), s.show(defaults)) << s.name();
    }
    Config c;
    s.apply(c, canonical_value(s, s.default_value, fake_env()));
    EXPECT_EQ(s.show(c), s.show(defaults)) << s.name() << " default text " << s.default_value;
  }
  EXPECT_EQ(parsed.resolved_value("data.cache_bytes"), "2147483648");
  for (const KeySpec& s : config_schema()) {
    if (s.name() == "data.cache_bytes") {
      EXPECT_EQ(s.default_value, "2G");
    }
  }
}

// Choices are enums after validation: each spelling reads back to its own value and name_of gives
// the spelling; a value outside the table is refused naming the choices.
TEST(ConfigSchema, ChoicesAreEnumsAndReadBack) {
  std::size_t checked = 0;
  for (const KeySpec& s : config_schema()) {
    if (s.kind != ValueKind::choice || !s.renamed_to.empty()) continue;
    for (const std::string& choice : s.choices) {
      Config c;
      s.apply(c, choice);
      EXPECT_EQ(s.show(c), choice) << s.name();
      ++checked;
    }
  }
  EXPECT_GE(checked, 40u);
  EXPECT_STREQ(name_of(PipelineSchedule::one_f_one_b), "1f1b");
  EXPECT_EQ(parse("[checkpoint]\nspace_check = warn\n").checkpoint.space_check, SpaceCheck::warn);
  // Keys that take a keyword or a value hold a kind and the value.
  const Config r = parse("[checkpoint]\nresume = ${SCRATCH}/c.h5\nalignment = 1M\n");
  EXPECT_EQ(r.checkpoint.resume.kind, ResumeFrom::Kind::file);
  EXPECT_EQ(r.checkpoint.resume.file, "/scratch/u1/c.h5");
  EXPECT_EQ(r.checkpoint.alignment.kind, Alignment::Kind::bytes);
  EXPECT_EQ(r.checkpoint.alignment.bytes, 1u << 20);
  EXPECT_EQ(parse("[checkpoint]\nalignment = none\n").checkpoint.alignment.kind, Alignment::Kind::none);
  EXPECT_EQ(parse("").checkpoint.alignment.kind, Alignment::Kind::auto_);
  EXPECT_EQ(error_of("[checkpoint]\nspace_check = maybe\n"),
            "test.ini:2: [checkpoint] space_check = 'maybe': expected one of error|warn|off");
}

TEST(Config, PathsExpandEnvironment) {
  const Config c = parse("[checkpoint]\ndir = ${SCRATCH}/ckpt/${SLURM_JOB_ID}\n[run]\nout_dir = cost$$/x\n");
  EXPECT_EQ(c.checkpoint.dir, "/scratch/u1/ckpt/4242");
  EXPECT_EQ(c.run.out_dir, "cost$/x");
}

TEST(ConfigErrors, UnknownKeyNamesFileLineAndSuggests) {
  const auto m = error_of("[train]\n\nglobal_bach = 3\n");
  EXPECT_NE(m.find("test.ini:3"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown key 'global_bach' in [train]"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'global_batch'"), std::string::npos) << m;
  // The list holds today's keys only, not the old names kept working (log_every is in [log] now).
  EXPECT_NE(
      m.find("; keys in [train]: global_batch, micro_batches, micro_batch, epochs, steps, eval_every, sync_batchnorm, "
             "loss, huber_delta, on_nonfinite, max_skipped, spike_factor, spike_window, recompute, loss_chunk, freeze"),
      std::string::npos)
      << m;
  EXPECT_EQ(m.find("log_every"), std::string::npos) << m;
}

TEST(ConfigErrors, UnknownSectionListsSections) {
  const auto m = error_of("[trian]\nepochs = 3\n");
  EXPECT_NE(m.find("test.ini:2"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown section [trian]"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean [train]"), std::string::npos) << m;
  EXPECT_NE(m.find("checkpoint"), std::string::npos) << m;
  // A longer name whose start is a section (PyTorch's "optimizer"): suggested too.
  const auto o = error_of("[optimizer]\nlr = 0.1\n");
  EXPECT_NE(o.find("unknown section [optimizer] (did you mean [optim]?)"), std::string::npos) << o;
}

TEST(ConfigErrors, WrongTypeNamesKeyValueAndAllowed) {
  const auto m = error_of("[train]\nglobal_batch = many\n");
  EXPECT_NE(m.find("test.ini:2: [train] global_batch = 'many': expected integer >= 1"), std::string::npos) << m;
  const auto b = error_of("[optim]\nnesterov = maybe\n");
  EXPECT_NE(b.find("[optim] nesterov = 'maybe': expected true|false"), std::string::npos) << b;
  const auto f = error_of("[optim]\nlr = 0.1x\n");
  EXPECT_NE(f.find("[optim] lr = '0.1x': expected number > 0"), std::string::npos) << f;
}

TEST(ConfigErrors, OutOfRangeNamesTheRange) {
  EXPECT_NE(error_of("[optim]\nlr = 0\n").find("expected number > 0"), std::string::npos);
  EXPECT_NE(error_of("[optim]\nmomentum = 1.5\n").find("expected number >= 0 and <= 1"), std::string::npos);
  EXPECT_NE(error_of("[kernels]\nthreads = 0\n").find("[kernels] threads = '0': expected integer >= 1 and <= 1024"),
            std::string::npos);
  EXPECT_NE(error_of("[optim]\nbetas = 0.9\n").find("expected two numbers"), std::string::npos);
  EXPECT_NE(error_of("[data]\ncache_bytes = 3X\n").find("expected a byte count"), std::string::npos);
  EXPECT_NE(error_of("[checkpoint]\nmpiio_hints = romio_cb_write=enable, foo\n")
                .find("[checkpoint] mpiio_hints = 'romio_cb_write=enable, foo': 'foo' is not key=value"),
            std::string::npos);
  EXPECT_NE(error_of("[checkpoint]\nalignment = big\n").find("[checkpoint] alignment = 'big': expected a byte count"),
            std::string::npos);
  EXPECT_NE(error_of("[train]\nepochs = 99999999999999999999999\n").find("[train] epochs"), std::string::npos);
}

// Byte counts: K, M, G, T and KiB ... TiB are powers of 1024; KB ... TB powers of 1000, as Hugging
// Face's max_shard_size = "5GB" (5000000000 bytes).
TEST(ConfigValues, ByteCountSuffixes) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("300B"), 300u);
  EXPECT_EQ(parse_byte_size("2K"), 2048u);
  EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_byte_size(" 2G "), 2ull << 30);
  EXPECT_EQ(parse_byte_size("3TiB"), 3ull << 40);
  EXPECT_EQ(parse_byte_size("40KB"), 40000u);
  EXPECT_EQ(parse_byte_size("300MB"), 300000000u);
  EXPECT_EQ(parse_byte_size("5GB"), 5000000000u);
  EXPECT_EQ(parse_byte_size("2TB"), 2000000000000u);
  for (const char* bad : {"5Gb", "5gb", "5 X", "GB", "5.5GB", "-1G"})
    EXPECT_THROW(parse_byte_size(bad), std::invalid_argument) << bad;
  EXPECT_THROW(parse_byte_size("20000000TB"), std::invalid_argument);
}

TEST(ConfigErrors, BadChoiceListsChoices) {
  const auto m = error_of("[run]\ndevice = gpu\n");
  EXPECT_NE(m.find("[run] device = 'gpu': expected one of auto|cpu|cuda"), std::string::npos) << m;
}

TEST(ConfigErrors, SyntaxErrorNamesLine) {
  const auto m = error_of("[run]\nseed = 1\nthis is not ini\n");
  EXPECT_NE(m.find("test.ini:3: cannot parse line 'this is not ini'"), std::string::npos) << m;
}

TEST(ConfigErrors, DuplicateKeyPointsAtSecondOccurrence) {
  const auto m = error_of("[run]\nseed = 1\nseed = 2\n");
  EXPECT_NE(m.find("test.ini:3: key 'run.seed' is given twice"), std::string::npos) << m;
}

TEST(ConfigErrors, KeyOutsideSection) {
  EXPECT_NE(error_of("seed = 1\n").find("outside any section"), std::string::npos);
}

TEST(ConfigErrors, UnsetVariableNamesIt) {
  const auto m = error_of("[data]\npath = ${NOT_SET_ANYWHERE}/x\n");
  EXPECT_NE(m.find("[data] path = '${NOT_SET_ANYWHERE}/x': environment variable NOT_SET_ANYWHERE is not set"),
            std::string::npos)
      << m;
  EXPECT_NE(error_of("[data]\npath = $HOME\n").find("must start ${VAR}"), std::string::npos);
}

TEST(ConfigErrors, BadOverrides) {
  EXPECT_NE(error_of("", {"train.global_batch"}).find("expected section.key=value"), std::string::npos);
  const auto m = error_of("", {"train.epoch=3"});
  EXPECT_NE(m.find("--set train.epoch: unknown key 'epoch' in [train] (did you mean 'epochs'?)"), std::string::npos)
      << m;
  EXPECT_NE(error_of("", {"run.seed=-1"}).find("--set: [run] seed = '-1'"), std::string::npos);
}

// The [model] keys whose help begins "arch = gpt or llama:" are tagged with those archs (and only
// they): the tag refuses them under another arch, the help tells the user which.
TEST(ConfigSchema, ArchitectureKeysAreTaggedAsTheirHelpSays) {
  int tagged = 0;
  for (const KeySpec& k : config_schema()) {
    if (k.section != "model" || k.help.rfind("arch = ", 0) != 0) {
      EXPECT_EQ(k.archs, "") << k.name();
      continue;
    }
    std::string said = k.help.substr(7, k.help.find(':') - 7);
    if (const auto o = said.find(" or "); o != std::string::npos) said.replace(o, 4, " ");
    EXPECT_EQ(k.archs, said) << k.name();
    ++tagged;
  }
  EXPECT_EQ(tagged, 36);  // (5 of both, 3 of gpt only, 28 of llama only)
}

// An imported model's [model] section: the keys off their defaults, in schema order, as --print-ini
// writes them; read back, the same values.
TEST(ConfigSchema, ChangedKeysReadBack) {
  Config c;
  EXPECT_EQ(changed_keys_ini(c, "model"), "");
  c.model.arch = Arch::llama, c.model.n_layer = 2, c.model.n_head = 4, c.model.n_embd = 32, c.model.ffn_dim = 48;
  c.model.norm_eps = 1e-6, c.model.mlp = Mlp::geglu, c.model.rope_scaling = rope_scaling_of("linear(8)");
  c.model.logits_scaling = 0.1, c.model.tie_embeddings = true;
  const std::string ini = changed_keys_ini(c, "model");
  EXPECT_EQ(ini,
            "arch = llama\nn_layer = 2\nn_head = 4\nn_embd = 32\nffn_dim = 48\nnorm_eps = 1e-06\n"
            "rope_scaling = linear(8)\nmlp = geglu\nlogits_scaling = 0.1\n");
  const Config back = parse("[model]\n" + ini);
  EXPECT_EQ(back.model.norm_eps, 1e-6);
  EXPECT_EQ(back.model.logits_scaling, 0.1);
  EXPECT_EQ(changed_keys_ini(back, "model"), ini);
}

TEST(ConfigErrors, CrossKeyChecks) {
  EXPECT_EQ(parse("[train]\nepochs = 2\nsteps = 10\n").train.steps, 10);  // steps > 0 wins over epochs
  EXPECT_NE(error_of("[train]\nepochs = 0\n").find("nothing to train"), std::string::npos);
  EXPECT_NE(error_of("[train]\nglobal_batch = 10\nmicro_batches = 3\n").find("does not divide global_batch = 10"),
            std::string::npos);
  EXPECT_NE(
      error_of("[train]\nmicro_batch = 8\nmicro_batches = 2\n").find("micro_batch and micro_batches are both set"),
      std::string::npos);
  const std::string llama = "[model]\narch = llama\nn_layer = 2\nn_head = 2\nn_embd = 16\nffn_dim = 32\n";
  EXPECT_EQ(parse(llama).model.arch, Arch::llama);
  EXPECT_NE(
      error_of("[model]\narch = llama\nn_layer = 2\nn_head = 2\nn_embd = 16\n").find("needs [model] ffn_dim >= 1"),
      std::string::npos);
  EXPECT_NE(error_of(llama + "n_kv_heads = 3\n").find("n_kv_heads = 3 must divide n_head"), std::string::npos);
  EXPECT_EQ(parse(llama + "n_kv_heads = 1\n").model.n_kv_heads, 1);
  EXPECT_NE(error_of(llama + "rope_scaling = llama3(32, 4, 1, 8192)\n").find("HIGH > LOW"), std::string::npos);
  EXPECT_NE(error_of(llama + "rope_scaling = yarn\n").find("rope_scaling = 'yarn'"), std::string::npos);
  EXPECT_EQ(rope_scaling_text(parse(llama + "rope_scaling = llama3(32, 1, 4, 8192)\n").model.rope_scaling),
            "llama3(32, 1, 4, 8192)");
  EXPECT_EQ(rope_scaling_of("linear(8)").linear, 8);  // (Gemma 3 4B-27B's)
  EXPECT_EQ(rope_scaling_of("linear(8)").factor, 0);
  EXPECT_NE(error_of(llama + "rope_scaling = linear(0)\n").find("linear(FACTOR) >= 1, longrope("), std::string::npos);
  // longrope (Phi-3.5 mini's): the context, the amplitude, one short and one long factor a rotated pair
  // (heads of 8: 4 pairs; rope_dims = 4: 2).
  const RopeScaling lr = rope_scaling_of("longrope(32, 1.09, 1 1.5 2 4, 1.25 2 4 8)");
  EXPECT_EQ(lr.original_context, 32);
  EXPECT_DOUBLE_EQ(lr.amplitude, 1.09);
  EXPECT_EQ(lr.short_factor, (std::vector<double>{1, 1.5, 2, 4}));
  EXPECT_EQ(lr.long_factor, (std::vector<double>{1.25, 2, 4, 8}));
  EXPECT_EQ(
      rope_scaling_text(parse(llama + "rope_scaling = longrope(32, 1.09, 1 1.5 2 4, 1.25 2 4 8)\n").model.rope_scaling),
      "longrope(32, 1.0900000000000001, 1 1.5 2 4, 1.25 2 4 8)");  // (to the last bit)
  for (const char* bad : {"longrope(32, 1.09, 1 1.5, 1.25)", "longrope(32, 1.09, 1 x, 1 2)", "longrope(32, 0, 1, 1)",
                          "longrope(32.5, 1, 1, 1)", "longrope(32, 1, 1, 1, 1)", "longropes(32, 1, 1, 1)"})
    EXPECT_NE(error_of(llama + "rope_scaling = " + bad + "\n").find("expected none"), std::string::npos) << bad;
  EXPECT_NE(error_of(llama + "rope_scaling = longrope(32, 1, 1 2, 1 2)\n").find("gives 2 factors for 4 rotated pairs"),
            std::string::npos);
  EXPECT_EQ(parse(llama + "rope_dims = 4\nrope_scaling = longrope(32, 1, 1 2, 1 2)\n").model.rope_dims, 4);
  // yarn: FACTOR, CONTEXT, then the amplitude (0.1 ln FACTOR + 1), BETA_FAST, BETA_SLOW (32, 1) and TRUNCATE (1).
  const RopeScaling y = rope_scaling_of("yarn(4, 32768)");
  EXPECT_DOUBLE_EQ(y.yarn, 4);
  EXPECT_EQ(y.original_context, 32768);
  EXPECT_DOUBLE_EQ(y.amplitude, 0.1 * std::log(4.0) + 1);
  EXPECT_EQ(y.beta_fast * 100 + y.beta_slow, 3201);
  EXPECT_TRUE(y.truncate);
  const RopeScaling y6 = rope_scaling_of("yarn(40, 4096, 1.5, 16, 2, 0)");
  EXPECT_EQ(y6.amplitude * 100 + y6.beta_fast + y6.beta_slow / 10, 150 + 16 + 0.2);
  EXPECT_FALSE(y6.truncate);
  for (const char* bad : {"yarn(0.5, 4096)", "yarn(4)", "yarn(4, 4096.5)", "yarn(4, 4096, 1, 32)",
                          "yarn(4, 4096, 1, 32, 1, 2)", "yarn(4, 4096, 0)", "yarn(4 5, 4096)"})
    EXPECT_NE(error_of(llama + "rope_scaling = " + bad + "\n").find("expected none"), std::string::npos) << bad;
  EXPECT_NE(error_of(llama + "rope_dims = 5\n").find("rope_dims = 5: the rotated columns of a head of 8"),
            std::string::npos);
  EXPECT_NE(error_of(llama + "rope_dims = 10\n").find("an even number at most that"), std::string::npos);
  EXPECT_NE(error_of(llama + "attention_multiplier = 0.0625\nquery_pre_attn_scalar = 144\n")
                .find("both scale the scores (Granite's and Gemma 2's): set one"),
            std::string::npos);
  EXPECT_NE(error_of("[model]\narch = gpt\nn_layer = 1\nn_head = 2\nn_embd = 8\nqk_norm = true\n")
                .find("qk_norm is a key of arch = llama"),
            std::string::npos);
  EXPECT_EQ(parse(llama + "norm_eps = 1.5625e-07\n").model.norm_eps, 1.5625e-07);  // (GLM-4 9B's: no power of ten)
  EXPECT_NE(error_of(llama + "norm_eps = 0.5\n").find("norm_eps"), std::string::npos);
  EXPECT_NE(error_of(llama + "rope_local_theta = 10000\n").find("rope_local_theta needs [model] global_every"),
            std::string::npos);
  EXPECT_NE(
      error_of(llama + "global_every = 6\n").find("global_every needs [model] rope_local_theta or sliding_window"),
      std::string::npos);
  EXPECT_EQ(parse(llama + "sliding_window = 512\nglobal_every = 6\n").model.sliding_window, 512);  // (local: windowed)
  EXPECT_NE(error_of(llama + "qk_norm = true\nqk_norm_whole = true\n").find("qk_norm_whole = true spans the weighted"),
            std::string::npos);
  EXPECT_NE(error_of(llama + "post_norm = true\nsandwich_norm = true\n").find("post_norm and sandwich_norm are two"),
            std::string::npos);
  EXPECT_TRUE(parse(llama + "qk_norm = true\nqk_norm_weight = true\nqk_norm_whole = true\npost_norm = true\n")
                  .model.qk_norm_whole);
  EXPECT_NE(error_of("[model]\narch = gpt\nn_layer = 1\nn_head = 2\nn_embd = 8\nsliding_window = 4\n")
                .find("sliding_window is a key of arch = llama, not of arch = gpt"),
            std::string::npos);
  EXPECT_EQ(parse(llama + "mlp = geglu\nnorm_offset = true\nrope_local_theta = 10000\nglobal_every = 6\n").model.mlp,
            Mlp::geglu);
  // Each [model] key of a typed architecture is refused under the others (the schema's archs tag).
  EXPECT_NE(error_of(llama + "activation = gelu_tanh\n").find("activation is a key of arch = gpt, not of arch = llama"),
            std::string::npos);
  EXPECT_NE(error_of("[model]\narch = gpt\nn_layer = 1\nn_head = 2\nn_embd = 8\nsandwich_norm = true\n")
                .find("sandwich_norm is a key of arch = llama, not of arch = gpt"),
            std::string::npos);
  EXPECT_NE(error_of("[model]\nn_layer = 2\n")
                .find("n_layer is a key of arch = gpt or llama, not of arch = layers: set [model] arch"),
            std::string::npos);
  EXPECT_NE(error_of(llama + "bias = false\n")
                .find("bias is a key of arch = gpt, not of arch = llama (arch = llama has no dropout"),
            std::string::npos);
  EXPECT_NE(
      error_of("[model]\narch = llama\nn_layer = 1\nn_head = 4\nn_embd = 12\nffn_dim = 8\n").find("even head width"),
      std::string::npos);
  EXPECT_NE(error_of("[model]\nffn_dim = 8\n").find("set [model] arch"), std::string::npos);
  EXPECT_EQ(parse("[train]\nmicro_batch = 8\nmicro_batches = 1\n").train.micro_batch, 8);  // (as --print-ini writes it)
  EXPECT_EQ(parse("[train]\nmicro_batch = auto\n").train.micro_batch, 0);
  EXPECT_NE(error_of("[train]\nmicro_batch = 0\n").find("expected auto or a whole number >= 1"), std::string::npos);
  EXPECT_NE(error_of("[run]\ndevice = cpu\n[parallel]\ncomm = nccl\n").find("comm = nccl needs device = cuda"),
            std::string::npos);
}

TEST(ConfigHelp, ListsEveryKeyWithTypeAndDefault) {
  const std::string help = config_help();
  for (const auto& s : config_schema()) {
    EXPECT_NE(help.find("[" + s.section + "]"), std::string::npos) << s.section;
    EXPECT_NE(help.find("    " + s.key + " = " + describe_type(s)), std::string::npos) << s.name();
    EXPECT_NE(help.find(s.help), std::string::npos) << s.name();
  }
  EXPECT_NE(help.find("global_batch = integer >= 1  (default: 64)"), std::string::npos);
}

TEST(ConfigFile, MissingFileIsBadInputNamingIt) {
  try {
    read_text_file("/no/such/dir/x.ini", "configuration file");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("configuration file '/no/such/dir/x.ini' cannot be read"), std::string::npos);
  }
}

// [run] cuda_graphs is refused, with the reason, where a recorded step could not replay the run.
TEST(ConfigErrors, CudaGraphsRefusalsNameTheReason) {
  auto why = [](const std::string& layers, DeviceKind device, int dp = 1, const std::string& extra = "") {
    return cuda_graphs_refusal(parse("[run]\ncuda_graphs = true\n[model]\nlayers = " + layers + "\n" + extra), device,
                               dp);
  };
  EXPECT_EQ(why("flatten dense(8) relu dense(2)", DeviceKind::cuda), "");
  EXPECT_EQ(why("conv(4,3,pad=1) relu maxpool(2) res(conv(4,3,pad=1) relu) flatten dense(2)", DeviceKind::cuda, 4), "");
  EXPECT_NE(why("flatten dense(2)", DeviceKind::cpu).find("needs device = cuda"), std::string::npos);
  EXPECT_NE(
      why("flatten dense(2)", DeviceKind::cuda, 1, "[parallel]\npipeline_parallel = 2\n").find("pipeline_parallel = 1"),
      std::string::npos);
  EXPECT_EQ(why("flatten res(dense(8) dropout(10)) dense(2)", DeviceKind::cuda), "") << "dropout replays";
  EXPECT_EQ(why("conv(4,3) batchnorm relu flatten dense(2)", DeviceKind::cuda, 1), "") << "one rank: on the device";
  EXPECT_NE(why("conv(4,3) batchnorm relu flatten dense(2)", DeviceKind::cuda, 2).find("synchronized batch norm"),
            std::string::npos);
  EXPECT_EQ(why("conv(4,3) batchnorm relu flatten dense(2)", DeviceKind::cuda, 2, "[train]\nsync_batchnorm = false\n"),
            "");
  EXPECT_EQ(cuda_graphs_refusal(parse("[model]\nlayers = batchnorm\n"), DeviceKind::cpu, 2), "") << "off: no refusal";
}

// Injected faults (Config::faults): read from HPCTRAIN_TEST_* once, strictly; none by default.
TEST(Faults, ReadOnceFromTheEnvironmentStrictly) {
  std::map<std::string, std::string> vars;
  const EnvLookup env = [&](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  const Faults none = faults_from_environment(env);
  EXPECT_EQ(none.signal.rank, -1);
  EXPECT_EQ(none.fail_write, -1);
  EXPECT_FALSE(none.no_flock);
  EXPECT_FALSE(none.free_bytes.has_value());
  vars = {{"HPCTRAIN_TEST_SIGNAL", "1:7"},    {"HPCTRAIN_TEST_STALL", "0:3"},
          {"HPCTRAIN_TEST_FAIL_WRITE", "20"}, {"HPCTRAIN_TEST_FAIL_CHECKPOINT", "40"},
          {"HPCTRAIN_TEST_NO_FLOCK", ""},     {"HPCTRAIN_TEST_FREE_BYTES", "4096"}};
  const Faults f = faults_from_environment(env);
  EXPECT_EQ(f.signal.rank, 1);
  EXPECT_EQ(f.signal.step, 7);
  EXPECT_EQ(f.stall.rank, 0);
  EXPECT_EQ(f.stall.step, 3);
  EXPECT_EQ(f.fail_write, 20);
  EXPECT_EQ(f.fail_checkpoint, 40);
  EXPECT_TRUE(f.no_flock);
  EXPECT_EQ(f.free_bytes.value_or(0), 4096u);
  for (const auto& [var, bad] : std::vector<std::pair<std::string, std::string>>{{"HPCTRAIN_TEST_SIGNAL", "1"},
                                                                                 {"HPCTRAIN_TEST_SIGNAL", "1:x"},
                                                                                 {"HPCTRAIN_TEST_STALL", "a:2"},
                                                                                 {"HPCTRAIN_TEST_FAIL_WRITE", "20s"},
                                                                                 {"HPCTRAIN_TEST_FREE_BYTES", "-1"}}) {
    vars = {{var, bad}};
    try {
      faults_from_environment(env);
      ADD_FAILURE() << var << "=" << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find(var + "='" + bad + "'"), std::string::npos) << e.what();
    }
  }
}
