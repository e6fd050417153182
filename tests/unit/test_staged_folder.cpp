// replace_folder (io/staged_folder.hpp): the old folder until the new one is complete, then the
// new one whole, with the user's own files carried over.
#include "hpctrain/io/staged_folder.hpp"

#include <fcntl.h>
#include <linux/fs.h>  // FS_IOC_SETFLAGS, FS_IMMUTABLE_FL
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "unit_test_util.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {
void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string got(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// "name=contents" of every entry below `dir`, sorted ("name@" for a link, "name/" for a folder), but
// the file-by-file staging folder's.
std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().lexically_relative(dir).string();
    if (name.rfind(".hpctrain.partial", 0) == 0) continue;
    if (e.is_symlink())
      out.push_back(name + "@" + fs::read_symlink(e.path()).string());
    else if (e.is_directory())
      out.push_back(name + "/");
    else
      out.push_back(name + "=" + got(e.path()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

ino_t inode(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// (config.json.partial, a killed writer's, is not claimed here: replace_folder drops "*.partial" itself.)
bool weights(const std::string& name) { return name.rfind("model", 0) == 0; }

// An earlier export's folder with the user's files beside it.
fs::path old_export(const std::string& leaf) {
  const fs::path dir = unittest::temp_path(leaf);
  fs::remove_all(dir);
  fs::remove_all(dir.string() + ".partial");
  fs::remove_all(dir.string() + ".old");
  put(dir / "config.json", "old config");
  put(dir / "model-00001-of-00002.safetensors", "old w1");
  put(dir / "model-00002-of-00002.safetensors", "old w2");
  put(dir / "config.json.partial", "a killed write's");
  put(dir / "README.md", "mine");
  put(dir / "notes" / "a.txt", "also mine");
  fs::create_symlink("README.md", dir / "link");
  return dir;
}

const std::vector<std::string> kNewFolder{"README.md=mine", "config.json=new config",
                                          "link@README.md", "model.safetensors=new",
                                          "notes/",         "notes/a.txt=also mine"};
}  // namespace

// The writer fills a folder beside `dir`: while it writes, `dir` is the old folder, entry for entry;
// after, `dir` is the new files and the user's (README.md the same file, linked), the old weights and a
// killed write's partial file gone, nothing left beside it or in it. Each way of swapping (file by
// file, a mount point's: staged inside the folder, README.md never moved).
TEST(StagedFolder, OldFolderUntilTheNewOneIsComplete) {
  for (FolderSwap how : {FolderSwap::exchange, FolderSwap::two_renames, FolderSwap::file_by_file}) {
    const fs::path dir = old_export("staged");
    const unittest::RemovedAtExit gone{dir.string(), dir.string() + ".partial", dir.string() + ".old"};
    const std::vector<std::string> before = listing(dir);
    const ino_t readme = inode(dir / "README.md");
    std::vector<std::string> while_writing;
    replace_folder(
        dir.string(), "test",
        [&](const std::string& staging) {
          EXPECT_NE(fs::path(staging), dir);
          put(fs::path(staging) / "config.json", "new config");
          put(fs::path(staging) / "model.safetensors", "new");
          while_writing = listing(dir);
        },
        weights, how);
    EXPECT_EQ(while_writing, before);
    EXPECT_EQ(listing(dir), kNewFolder);
    EXPECT_EQ(inode(dir / "README.md"), readme) << "carried by a hard link, not a copy";
    EXPECT_FALSE(fs::exists(dir.string() + ".partial"));
    EXPECT_FALSE(fs::exists(dir.string() + ".old"));
    EXPECT_FALSE(fs::exists(dir / ".hpctrain.partial"));
  }
}

// A writer that throws (a refused tensor, a full disk) leaves `dir` as it was and nothing beside it
// or in it, each way; its message names the file in `dir`, not the removed staging copy.
TEST(StagedFolder, WriterThatThrowsLeavesTheOldFolder) {
  for (FolderSwap how : {FolderSwap::exchange, FolderSwap::file_by_file}) {
    const fs::path dir = old_export("refused");
    const unittest::RemovedAtExit gone{dir.string(), dir.string() + ".partial", dir.string() + ".old"};
    const std::vector<std::string> before = listing(dir);
    const auto refuse = [](const std::string& staging) {
      const fs::path file = fs::path(staging) / "model-00001-of-00002.safetensors";
      put(file, "new w1");
      throw bad_input(file.string() + ": tensor w: 1e6 beyond fp16");
    };
    std::string message;
    try {
      replace_folder(dir.string(), "test", refuse, weights, how);
    } catch (const Error& e) {
      message = e.what();
      EXPECT_EQ(e.code(), ExitCode::bad_input);
    }
    EXPECT_EQ(message, (dir / "model-00001-of-00002.safetensors").string() + ": tensor w: 1e6 beyond fp16; " +
                           dir.string() + " is as it was");
    EXPECT_EQ(listing(dir), before);
    EXPECT_FALSE(fs::exists(dir.string() + ".partial"));
    EXPECT_FALSE(fs::exists(dir / ".hpctrain.partial"));
  }
}

// A new folder (its parent too); a link to a folder replaces that folder and stays a link.
TEST(StagedFolder, NewFolderAndALinkToOne) {
  const fs::path root = unittest::temp_path("staged_new");
  const unittest::RemovedAtExit gone{root.string()};
  fs::remove_all(root);
  const auto write = [](const std::string& staging) { put(fs::path(staging) / "model.safetensors", "new"); };
  replace_folder((root / "a" / "out").string() + "/", "test", write, weights);
  EXPECT_EQ(listing(root), (std::vector<std::string>{"a/", "a/out/", "a/out/model.safetensors=new"}));
  put(root / "real" / "README.md", "mine");
  fs::create_directory_symlink("real", root / "via");
  replace_folder((root / "via").string(), "test", write, weights);
  EXPECT_TRUE(fs::is_symlink(root / "via"));
  EXPECT_EQ(listing(root / "real"), (std::vector<std::string>{"README.md=mine", "model.safetensors=new"}));
  EXPECT_FALSE(fs::exists(root / "real.partial"));
  EXPECT_FALSE(fs::exists(root / "via.partial"));
  fs::remove_all(root);
}

// What a killed export left: its staging folder is removed; "<dir>.old" without `dir` (killed between
// the two renames) is the folder again, its files carried into the new one.
TEST(StagedFolder, LeftoversOfAKilledExport) {
  const auto write = [](const std::string& staging) { put(fs::path(staging) / "model.safetensors", "new"); };
  const fs::path dir = old_export("killed");
  const unittest::RemovedAtExit gone{dir.string(), dir.string() + ".partial", dir.string() + ".old"};
  put(dir.string() + ".partial/model.safetensors", "half");
  replace_folder(dir.string(), "test", write, weights);
  EXPECT_FALSE(fs::exists(dir.string() + ".partial"));
  EXPECT_EQ(got(dir / "model.safetensors"), "new");

  fs::rename(dir, dir.string() + ".old");
  put(dir.string() + ".partial/model.safetensors", "half");
  replace_folder(dir.string(), "test", write, weights);
  EXPECT_EQ(got(dir / "README.md"), "mine");
  EXPECT_EQ(got(dir / "model.safetensors"), "new");
  EXPECT_FALSE(fs::exists(dir.string() + ".old"));
  EXPECT_FALSE(fs::exists(dir.string() + ".partial"));
}

// A file, the current folder and a folder holding it are refused with one line, the writer never
// called.
TEST(StagedFolder, RefusesAFileAndTheCurrentFolder) {
  const fs::path root = unittest::temp_path("staged_refused");
  const unittest::RemovedAtExit gone{root.string()};
  fs::remove_all(root);
  put(root / "file", "x");
  fs::create_directories(root / "cwd" / "below");
  bool called = false;
  const auto write = [&](const std::string&) { called = true; };
  EXPECT_EQ(refusal([&] { replace_folder((root / "file").string(), "--export-hf f", write, weights); }),
            "--export-hf f: " + (root / "file").string() + " is not a folder");
  const fs::path was = fs::current_path();
  fs::current_path(root / "cwd" / "below");
  for (const std::string& dir : {std::string("."), std::string(".."), (root / "cwd").string()})
    EXPECT_NE(
        refusal([&] { replace_folder(dir, "--export-hf", write, weights); }).find("is the current folder or holds it"),
        std::string::npos)
        << dir;
  fs::current_path(was);
  EXPECT_FALSE(called);
  EXPECT_EQ(listing(root), (std::vector<std::string>{"cwd/", "cwd/below/", "file=x"}));
  fs::remove_all(root);
}

// A folder whose parent takes no new entries (immutable here, as root may write anywhere else; a
// parent the user may not write in on a cluster): the files replaced one by one inside it.
TEST(StagedFolder, ParentThatTakesNoNewEntries) {
  const fs::path root = unittest::temp_path("staged_locked");
  const unittest::RemovedAtExit gone{root.string()};
  struct Immutable {  // the flag on `root` while it lives (cleared whatever the test does)
    int fd = -1, flags = 0;
    bool on = false;
    explicit Immutable(const fs::path& p) : fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY)) {
      int f = 0;
      if (fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) f = flags | FS_IMMUTABLE_FL;
      on = fd >= 0 && f != 0 && ::ioctl(fd, FS_IOC_SETFLAGS, &f) == 0;
    }
    ~Immutable() {
      if (on) ::ioctl(fd, FS_IOC_SETFLAGS, &flags);
      if (fd >= 0) ::close(fd);
    }
  };
  fs::remove_all(root);
  const fs::path dir = root / "out";
  put(dir / "model.safetensors", "old");
  put(dir / "README.md", "mine");
  std::vector<std::string> seen;
  std::error_code probe;
  {
    const Immutable lock(root);
    if (!lock.on) GTEST_SKIP() << "cannot make " << root << " immutable (needs root and a file system with the flag)";
    fs::create_directory(root / "probe", probe);
    replace_folder(
        dir.string(), "test",
        [&](const std::string& staging) {
          seen.push_back(staging);
          put(fs::path(staging) / "model-00001-of-00001.safetensors", "new");
        },
        weights);
  }
  EXPECT_TRUE(probe) << "the immutable parent took a new entry";
  EXPECT_EQ(seen, std::vector<std::string>{(dir / ".hpctrain.partial").string()});
  EXPECT_EQ(listing(root),
            (std::vector<std::string>{"out/", "out/README.md=mine", "out/model-00001-of-00001.safetensors=new"}));
  fs::remove_all(root);
}

// Two replacements of one folder at once (two exports, two threads here: flock holds between open
// file descriptions) run one after the other: both complete, and the folder is the second's, whole.
// Without the lock the second removes the first's staging folder while it writes.
TEST(StagedFolder, TwoAtOnceRunOneAfterTheOther) {
  const fs::path dir = old_export("twice");
  const unittest::RemovedAtExit gone{dir.string(), dir.string() + ".partial", dir.string() + ".old"};
  std::atomic<int> writing{0}, most{0};
  const auto writer = [&](const std::string& text) {
    return [&, text](const std::string& staging) {
      most = std::max(most.load(), ++writing);
      for (int i = 0; i < 20; ++i) {
        put(fs::path(staging) / ("model-0000" + std::to_string(i % 5) + ".bin"), text);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      put(fs::path(staging) / "model.safetensors", text);
      --writing;
    };
  };
  std::string first_error, second_error;
  std::thread first([&] {
    try {
      replace_folder(dir.string(), "test", writer("first"), weights);
    } catch (const Error& e) {
      first_error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  try {
    replace_folder(dir.string(), "test", writer("second"), weights);
  } catch (const Error& e) {
    second_error = e.what();
  }
  first.join();
  EXPECT_EQ(first_error, "");
  EXPECT_EQ(second_error, "");
  EXPECT_EQ(most.load(), 1) << "the two writers overlapped";
  EXPECT_EQ(got(dir / "model.safetensors"), "second");
  EXPECT_FALSE(fs::exists(dir.string() + ".partial"));
}
