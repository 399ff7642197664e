// outdir.c: atomic output directories.  Part of support/; the backend writes
// a compilation's files through it, tsp-as too.
//
// Files go into a fresh sibling directory "<out>.tmp.<pid>.XXXXXX".  Commit
// swaps it into place in one step (renameat2 RENAME_EXCHANGE; where the
// filesystem cannot, an old output is moved aside, to
// "<out>.old.<pid>.XXXXXX", first) and removes the old one; abort removes it.  A run killed
// before either leaves them behind, and the next run into <out> removes the
// siblings of processes that no longer exist.  A failed run therefore leaves the old directory or nothing, and
// never a half-written one.  An existing directory is only ever replaced when
// it is empty or is a tspc output directory (its manifest starts with
// OUTDIR_MANIFEST_MARKER), so a typo in -o cannot wipe a user's files.
// Before the swap the new files are flushed to disk, and after it the
// directory holding <out>, so a power loss after tspc reports success
// cannot leave a directory of empty or truncated binaries.
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE  // syscall(), for renameat2
#define _GNU_SOURCE      // syncfs
#include "support.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

// SIGINT, SIGTERM, SIGHUP, SIGABRT (an internal error) and SIGXFSZ (a file
// past the size limit, ulimit -f) while an output directory is being
// written, or an exit() before it is committed (out of memory): the
// handler removes what this run created (only async-signal-safe calls:
// unlink, rmdir, rename), puts back a previous output moved aside, and
// dies of the signal.  SIGKILL cannot be caught; the next run cleans up.
static OutDir *volatile active;

static void remove_active(void) {
  OutDir *o = active;
  active = NULL;
  if (!o) return;
  for (int i = 0; i < o->nfiles; i++) unlink(o->files[i]);
  rmdir(o->tmp_path);
  if (o->old_path) rename(o->old_path, o->final_path);
}

static void on_fatal_signal(int sig) {
  remove_active();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void watch_signals(OutDir *o) {
  static bool at_exit;
  if (!at_exit) at_exit = atexit(remove_active) == 0;
  active = o;
  cleanup_signals_watch(on_fatal_signal);
}

static void unwatch_signals(void) {
  cleanup_signals_restore();
  active = NULL;
}

// The signals that end a process whose outputs must then go (SIGXFSZ: a
// file past the size limit, ulimit -f).  One the process was started
// ignoring (nohup's SIGHUP, a shell's `trap '' XFSZ`) stays ignored: what
// it would have interrupted goes on (a file past the size limit is then a
// write error, said as one).
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGXFSZ};
static struct sigaction cleanup_before[ARRAY_LEN(cleanup_signals)];

void cleanup_signals_watch(void (*on)(int)) {
  struct sigaction sa = {.sa_handler = on};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < ARRAY_LEN(cleanup_signals); i++) {
    sigaction(cleanup_signals[i], NULL, &cleanup_before[i]);
    if (cleanup_before[i].sa_handler != SIG_IGN) sigaction(cleanup_signals[i], &sa, NULL);
  }
}

void cleanup_signals_restore(void) {
  for (size_t i = 0; i < ARRAY_LEN(cleanup_signals); i++) sigaction(cleanup_signals[i], &cleanup_before[i], NULL);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static void remove_tree(const char *path) {
  nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool dir_is_empty(const char *path) {
  DIR *dir = opendir(path);
  if (!dir) return false;
  struct dirent *e;
  bool empty = true;
  while (empty && (e = readdir(dir)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = false;
  closedir(dir);
  return empty;
}

static bool dir_is_tspc_output(const char *path) {
  char *manifest = xmalloc(strlen(path) + 32);
  sprintf(manifest, "%s/manifest.yaml", path);
  FILE *fp = fopen(manifest, "r");
  free(manifest);
  if (!fp) return false;
  char line[64] = "";
  bool ok = fgets(line, sizeof line, fp) &&
            !strncmp(line, OUTDIR_MANIFEST_MARKER, strlen(OUTDIR_MANIFEST_MARKER));
  fclose(fp);
  return ok;
}

// Whether s is at least 4 decimal digits and then `suffix`.
static bool digits_then(const char *s, const char *suffix) {
  size_t n = strspn(s, "0123456789");
  return n >= 4 && !strcmp(s + n, suffix);
}

// Whether an output directory's entry is a file tspc or tsp-as writes
// there (backend/outdir.c): the manifest, the topology and model copies,
// devNNNN.tsp and .tsa, trace.json, links.yaml and .svg, coll-NAME.dot.
static bool is_output_name(const char *name) {
  static const char *const fixed[] = {"manifest.yaml", "topology.yaml", "model.tg",
                                      "trace.json",    "links.yaml",    "links.svg"};
  for (size_t i = 0; i < ARRAY_LEN(fixed); i++)
    if (!strcmp(name, fixed[i])) return true;
  size_t n = strlen(name);
  if (!strncmp(name, "coll-", 5) && n > 9 && !strcmp(name + n - 4, ".dot")) return true;
  return !strncmp(name, "dev", 3) && (digits_then(name + 3, ".tsp") || digits_then(name + 3, ".tsa"));
}

// The first entry of directory path (in the order readdir gives) that is
// not an output's (a file of the user's, or any subdirectory), malloc'd;
// NULL when there is none.
static char *foreign_entry(const char *path) {
  DIR *dir = opendir(path);
  if (!dir) return NULL;
  struct dirent *e;
  char *found = NULL;
  while (!found && (e = readdir(dir))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_output_name(e->d_name)) continue;
    found = xstrdup(e->d_name);
  }
  closedir(dir);
  return found;
}

// The length of path without its trailing slashes (at least 1).
static size_t trimmed_length(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  return n;
}

// "<path minus trailing slashes><suffix><pid>.XXXXXX", ready for mkdtemp:
// the pid lets a later run tell a killed run's debris from a live run's.
static char *sibling_template(const char *path, const char *suffix) {
  size_t n = trimmed_length(path);
  char *t = xmalloc(n + strlen(suffix) + 32);
  sprintf(t, "%.*s%s%ld.XXXXXX", (int)n, path, suffix, (long)getpid());
  return t;
}

// Whether name is "<base><suffix><pid>.XXXXXX" of a process that no longer
// exists (a compile killed before it could clean up).
static bool is_dead_runs_sibling(const char *name, const char *base, size_t blen, const char *suffix) {
  size_t slen = strlen(suffix);
  if (strncmp(name, base, blen) || strncmp(name + blen, suffix, slen)) return false;
  const char *p = name + blen + slen;
  char *end;
  errno = 0;
  long pid = strtol(p, &end, 10);
  if (errno || end == p || pid <= 0 || *end != '.' || strlen(end + 1) != 6) return false;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

// Removes the temporary siblings of path that killed runs left behind
// (SIGKILL gives no chance to clean up; the next run does).
static void remove_dead_runs_debris(const char *path) {
  size_t n = trimmed_length(path);
  char *dir = xstrdup(path);
  dir[n] = '\0';
  char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : dir;
  char *parent;
  if (!slash) {
    parent = xstrdup(".");
  } else {
    parent = xstrdup(dir);
    parent[slash == dir ? 1 : slash - dir] = '\0';  // "/x" -> "/"
  }
  DIR *d = opendir(parent);
  struct dirent *e;
  size_t blen = strlen(base);
  while (d && (e = readdir(d))) {
    if (!is_dead_runs_sibling(e->d_name, base, blen, ".tmp.") && !is_dead_runs_sibling(e->d_name, base, blen, ".old."))
      continue;
    char *victim = xmalloc(strlen(parent) + strlen(e->d_name) + 2);
    sprintf(victim, "%s/%s", parent, e->d_name);
    remove_tree(victim);
    free(victim);
  }
  if (d) closedir(d);
  free(parent);
  free(dir);
}

// mkdir -p of the directory that will hold `path`.
static bool make_parents(const char *path) {
  char *p = xstrdup(path);
  bool ok = true;
  for (char *s = p + 1; *s && ok; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) ok = false;
    *s = '/';
  }
  free(p);
  return ok;
}

bool outdir_check(const char *path, Diag *d, const char *tool) {
  if (!*path) {
    diag_tool_error(d, tool, "the output directory's name is empty");
    return false;
  }
  char *p = xstrdup(path);
  p[trimmed_length(path)] = '\0';
  struct stat st;
  bool ok = true;
  if (lstat(p, &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      diag_tool_error(d, tool,
                      "output '%s' is a symbolic link: give the directory itself (the output directory is "
                      "replaced whole, which cannot be done through a link)",
                      path);
      ok = false;
    } else if (!S_ISDIR(st.st_mode)) {
      diag_tool_error(d, tool, "output '%s' exists and is not a directory", path);
      ok = false;
    } else if (!dir_is_tspc_output(p) && !dir_is_empty(p)) {
      diag_tool_error(d, tool, "refusing to replace '%s': it is not empty and holds no tspc manifest.yaml", path);
      ok = false;
    } else {  // empty (nothing foreign in it), or an output's
      char *foreign = foreign_entry(p);
      if (foreign)
        diag_tool_error(d, tool,
                        "refusing to replace '%s': it holds '%s', which neither tspc nor tsp-as writes there (an "
                        "output directory is replaced whole: move it out, or give another -o)",
                        path, foreign);
      ok = !foreign;
      free(foreign);
    }
  }
  free(p);
  return ok;
}

bool outdir_begin(OutDir *o, const char *path, Diag *d, const char *tool) {
  *o = (OutDir){0};
  if (!outdir_check(path, d, tool)) return false;
  if (!make_parents(path)) {
    diag_tool_error(d, tool, "cannot create the directories above '%s': %s", path, strerror(errno));
    return false;
  }
  remove_dead_runs_debris(path);
  o->tmp_path = sibling_template(path, ".tmp.");
  if (!mkdtemp(o->tmp_path)) {
    diag_tool_error(d, tool, "cannot create a directory beside '%s': %s", path, strerror(errno));
    free(o->tmp_path);
    o->tmp_path = NULL;
    return false;
  }
  // mkdtemp makes the directory private (0700); give it the mode any
  // directory the user creates would have.
  mode_t mask = umask(0);
  umask(mask);
  chmod(o->tmp_path, 0777 & ~mask);
  o->final_path = xstrdup(path);
  watch_signals(o);
  return true;
}

// Records DIR/name among the run's files (before the file exists, so the
// signal handler never sees a half-made list) and returns its path.
static const char *add_file(OutDir *o, const char *name) {
  char *p = xmalloc(strlen(o->tmp_path) + strlen(name) + 2);
  sprintf(p, "%s/%s", o->tmp_path, name);
  if (o->nfiles == o->file_cap) {
    int cap = o->file_cap ? 2 * o->file_cap : 64;
    char **files = xmalloc(sizeof *files * (size_t)cap);
    for (int i = 0; i < o->nfiles; i++) files[i] = o->files[i];
    char **stale = o->files;
    o->files = files;
    o->file_cap = cap;
    free(stale);
  }
  o->files[o->nfiles] = p;
  o->nfiles = o->nfiles + 1;
  return p;
}

FILE *outdir_create_file(OutDir *o, const char *name, Diag *d, const char *tool) {
  FILE *fp = fopen(add_file(o, name), "wb");
  if (!fp) diag_tool_error(d, tool, "cannot write '%s/%s': %s", o->final_path, name, strerror(errno));
  return fp;
}

// One open, write and close, without stdio: no buffer to allocate and no
// fstat for its size, which for system10440's 10,440 binaries was two
// system calls and a heap trim a file.
bool outdir_write_file(OutDir *o, const char *name, const void *data, size_t n, Diag *d, const char *tool) {
  int fd = open(add_file(o, name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  bool ok = fd >= 0;
  for (const char *at = data, *end = at + n; ok && at < end;) {
    ssize_t w = write(fd, at, (size_t)(end - at));
    if (w > 0) at += w;
    else ok = w < 0 && errno == EINTR;
  }
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && ok) ok = false, err = errno;
  if (!ok) diag_tool_error(d, tool, "cannot write '%s/%s': %s", o->final_path, name, strerror(err));
  return ok;
}

static void outdir_release(OutDir *o) {
  unwatch_signals();
  for (int i = 0; i < o->nfiles; i++) free(o->files[i]);
  free(o->files);
  free(o->tmp_path);
  free(o->final_path);
  free(o->old_path);
  *o = (OutDir){0};
}

void outdir_abort(OutDir *o) {
  unwatch_signals();
  if (o->tmp_path) remove_tree(o->tmp_path);
  outdir_release(o);
}

// Swaps two directory entries in one step (Linux renameat2 with
// RENAME_EXCHANGE, through syscall(): libc may not declare it); false
// where the kernel or the filesystem cannot, and the caller falls back.
static bool exchange(const char *a, const char *b) {
#ifdef SYS_renameat2
  return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 1u << 1 /* RENAME_EXCHANGE */) == 0;
#else
  (void)a, (void)b;
  return false;
#endif
}

// Flushes every file written into `path`: one syncfs of its filesystem,
// not an fsync a file (10,440 binaries would cost 10,440 journal commits).
static bool flush_tree(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  bool ok = syncfs(fd) == 0;
  close(fd);
  return ok;
}

// Makes a rename in the directory holding `path` durable.
static void flush_parent(const char *path) {
  char *parent = xstrdup(path);
  parent[trimmed_length(path)] = '\0';
  char *slash = strrchr(parent, '/');
  if (!slash) strcpy(parent, ".");
  else if (slash == parent) parent[1] = '\0';
  else *slash = '\0';
  int fd = open(parent, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);  // a failure here loses only the rename's durability, not data
    close(fd);
  }
  free(parent);
}

bool outdir_commit(OutDir *o, Diag *d, const char *tool) {
  struct stat st;
  if (!flush_tree(o->tmp_path)) {
    diag_tool_error(d, tool, "cannot flush '%s' to disk: %s", o->tmp_path, strerror(errno));
    outdir_abort(o);
    return false;
  }
  // A previous output is swapped with the new one in one step, so DIR never
  // disappears; the old one, now under the temporary name, is removed.
  if (lstat(o->final_path, &st) == 0 && S_ISDIR(st.st_mode) && exchange(o->tmp_path, o->final_path)) {
    unwatch_signals();
    flush_parent(o->final_path);
    remove_tree(o->tmp_path);
    outdir_release(o);
    return true;
  }
  if (stat(o->final_path, &st) == 0) {
    char *old = sibling_template(o->final_path, ".old.");
    // mkdtemp reserves a unique name; rename() may replace an empty directory.
    if (!mkdtemp(old) || rename(o->final_path, old) != 0) {
      diag_tool_error(d, tool, "cannot move '%s' aside: %s", o->final_path, strerror(errno));
      rmdir(old);
      free(old);
      outdir_abort(o);
      return false;
    }
    o->old_path = old;  // from here a signal puts it back
  }
  if (rename(o->tmp_path, o->final_path) != 0) {
    diag_tool_error(d, tool, "cannot rename output into '%s': %s", o->final_path, strerror(errno));
    unwatch_signals();
    if (o->old_path) rename(o->old_path, o->final_path);  // put the previous output back
    outdir_abort(o);
    return false;
  }
  unwatch_signals();
  flush_parent(o->final_path);
  if (o->old_path) remove_tree(o->old_path);
  outdir_release(o);
  return true;
}
