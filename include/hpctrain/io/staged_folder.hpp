// A folder replaced as a whole (--export-hf's Hugging Face folder): readers of the folder see the
// old one or the new one, never a mix, whenever the writer stops (killed, out of space, a refused
// tensor).
#pragma once

#include <functional>
#include <string>

namespace hpctrain {

// How the complete staging folder takes the folder's place.
enum class FolderSwap {
  exchange,      // one step: renameat2(RENAME_EXCHANGE), then the old folder removed
  two_renames,   // the folder to "<dir>.old", the staging folder to the folder, "<dir>.old" removed
  file_by_file,  // staged in "<dir>/.hpctrain.partial", the files renamed into the folder one by one
                 // (config.json and the index last), then the stale ones removed
};

// Replaces folder `dir` (created when missing; a link to a folder replaces that folder):
//  1. `write(staging)` fills a new folder "<dir>.partial" beside it (the same file system);
//  2. the entries of the old folder that the new one lacks and `stale(name)` does not claim (a
//     README.md, .git/, the user's own files) are hard-linked into it (copied where the file system
//     has no hard links); "*.partial" entries (unfinished files of a killed writer) are never kept;
//  3. it takes the folder's place by `how`; where the file system cannot exchange (EINVAL, ENOSYS:
//     NFS, some parallel file systems), by two renames: a reader then meets no folder for that moment.
// A folder that is a mount point (a container's volume: it cannot be renamed, and its sibling may be
// on another file system), and one beside which "<dir>.partial" cannot be made (EACCES, EPERM, EROFS:
// a project folder in an administrator's; a line says so), is replaced file_by_file: a reader in
// that moment may meet a mix.
// Calls for folders of one parent run one at a time (an exclusive flock on the parent, where the
// file system has flock): two exports into one folder at once both complete, one after the other.
// When `write` throws, the staging folder is removed and `dir` is as it was (an Error's message then
// names the files in `dir`, not the staging folder's, and says so). What an earlier call
// stopped by a kill left ("<dir>.partial", "<dir>.old") is cleaned first; "<dir>.old" without `dir`
// (stopped between the two renames) is put back as `dir` before that. bad_input naming the folder
// (`what` starts the message: "--export-hf out") for a path that is not a folder, the current
// folder or one holding it (its replacement would leave the process in a removed folder), and a
// step that fails.
void replace_folder(const std::string& dir, const std::string& what,
                    const std::function<void(const std::string& staging)>& write,
                    const std::function<bool(const std::string& name)>& stale, FolderSwap how = FolderSwap::exchange);

}  // namespace hpctrain
