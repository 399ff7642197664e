// tsp-objdump.c: prints device binaries as assembly.  Decodes with the
// runtime's loader (runtime/loader.c), which checks every byte, and prints
// with isa_print_device, whose output tsp-as reads back to the identical
// binary.  Given an output directory it prints the whole of it as one .tsa:
// the prediction, the model, every device and its tensor homes, so that
// tsp-as makes a directory tsp-emu runs exactly as the original.  -S adds
// each instruction's debug comment (tspc -g's debug section).
//
//   tsp-objdump [-S] FILE.tsp...
//   tsp-objdump [-S] DIR
//
// Exit status: 0 on success, 1 if anything is unusable.
#include "../runtime/emu.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: tsp-objdump [-S] FILE.tsp...\n"
          "       tsp-objdump [-S] DIR\n"
          "\n"
          "  -S, --source    with each instruction, its debug comment (a binary compiled with\n"
          "                  tspc -g): the schedule cycle, the op or transfer it serves, the\n"
          "                  algorithm step and the .tg line\n"
          "      --version, --help\n"
          "\n"
          "An output DIR (of tspc or tsp-as) prints as one .tsa that tsp-as assembles back into a\n"
          "directory tsp-emu runs as the original: .cycles, .batches, the model (.model lines),\n"
          "every device with its tensor homes (.tensor).  The syntax is in docs/isa.md.\n");
}

// Without -S the debug comments go: the listing is the binary alone.
static void drop_notes(DeviceProgram *dp) {
  for (int u = 0; u < dp->units.len; u++) dp->units.data[u].notes.len = 0;
}

// model: the .tg the binary was compiled from, quoted with -S (NULL: none).
static void print_device(DeviceProgram *dp, int ndevices, bool source, const SrcFile *model, FILE *out) {
  if (!source) drop_notes(dp);
  if (source && !dp->debug) fprintf(out, "; no debug section (tspc -g writes one)\n");
  isa_print_device_source(dp, ndevices, source ? model : NULL, out);
}

// The model.tg beside a binary (tspc writes one into every output
// directory), or NULL.
static SrcFile *model_beside(Arena *a, const char *binary) {
  const char *slash = strrchr(binary, '/'), *err;
  const char *path = slash ? arena_printf(a, "%.*s/model.tg", (int)(slash - binary), binary) : "model.tg";
  return src_read(a, path, &err);
}

static int dump_file(const char *path, bool source) {
  char err[256];
  size_t n;
  unsigned char *data = emu_read_file(path, &n, err, sizeof err);
  if (!data) {
    fprintf(stderr, "tsp-objdump: error: cannot read '%s': %s\n", path, err);
    return 1;
  }
  Arena a = {0};
  DeviceProgram dp;
  int ndevices;
  bool ok = emu_decode_binary(&a, data, n, -1, NULL, &dp, &ndevices, err, sizeof err);
  free(data);
  if (ok) {
    printf("; %s: format %d, %zu bytes%s\n", path, ISA_BINARY_VERSION, n, dp.debug ? ", with a debug section" : "");
    print_device(&dp, ndevices, source, source ? model_beside(&a, path) : NULL, stdout);
  } else {
    fprintf(stderr, "tsp-objdump: error: %s: %s\n", path, err);
  }
  arena_free(&a);
  return ok ? 0 : 1;
}

// The model, one `.model` line per line of it.
static void print_model(const SrcFile *src, FILE *out) {
  for (const char *at = src->text, *end = src->text + src->len; at < end;) {
    const char *nl = memchr(at, '\n', (size_t)(end - at));
    size_t len = (size_t)((nl ? nl : end) - at);
    fprintf(out, len ? ".model %.*s\n" : ".model\n", (int)len, at);
    at = nl ? nl + 1 : end;
  }
}

// What the manifest says beside the binaries, then every device with its homes.
static bool print_dir(Arena *a, const EmuInput *in, bool source, FILE *out) {
  const Program *p = in->prog;
  fprintf(out, "; %s: an output directory of %d device%s (binary format %d)\n", in->dir, p->ndevices,
          p->ndevices == 1 ? "" : "s", ISA_BINARY_VERSION);
  if (p->predicted_cycles >= 0) fprintf(out, ".cycles %lld\n", (long long)p->predicted_cycles);
  if (p->batches > 1) fprintf(out, ".batches %d\n", p->batches);
  SrcFile *model = NULL;
  if (in->model) {
    const char *err, *path = arena_printf(a, "%s/%s", in->dir, in->model);
    if (!(model = src_read(a, path, &err))) {
      fprintf(stderr, "tsp-objdump: error: cannot read '%s': %s\n", path, err);
      return false;
    }
    print_model(model, out);
  }
  for (int v = 0; v < p->ndevices; v++) {
    DeviceProgram *dp = &p->devices[v];
    bool homes = false;
    for (int i = 0; i < p->tensors.len && !homes; i++) homes = p->tensors.data[i].device == v;
    if (!dp->units.len && !dp->records.len && !homes) continue;  // no section: an empty program (a failed device's)
    print_device(dp, p->ndevices, source, model, out);
    for (int i = 0; i < p->tensors.len; i++)
      if (p->tensors.data[i].device == v) isa_print_tensor(&p->tensors.data[i], out);
  }
  return true;
}

static int dump_dir(const char *dir, bool source) {
  Arena a = {0};
  Diag d;
  diag_init(&d, stderr);
  EmuInput in;
  bool ok = emu_load_dir(&a, &d, "tsp-objdump", dir, &in) && print_dir(&a, &in, source, stdout);
  arena_free(&a);
  return ok ? 0 : 1;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {{"source", no_argument, 0, 'S'},
                                           {"version", no_argument, 0, 'V'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  bool source = false;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, "Sh", longopts, NULL)) != -1;) {
    switch (ch) {
    case 'S': source = true; break;
    case 'V': printf("tsp-objdump %s\n", TSPC_VERSION); return 0;
    case 'h': usage(stdout); return 0;
    default: {
      char why[512];
      fprintf(stderr, "tsp-objdump: error: %s\n", cli_bad_option(argv[optind - 1], optopt, longopts, why, sizeof why));
      return 1;
    }
    }
  }
  if (optind == argc) {
    usage(stderr);
    return 1;
  }
  if (is_dir(argv[optind])) {
    if (optind + 1 != argc) {
      fprintf(stderr, "tsp-objdump: error: give one DIR, or FILE.tsp... (try --help)\n");
      return 1;
    }
    return dump_dir(argv[optind], source);
  }
  int status = 0;
  for (int i = optind; i < argc; i++) status |= dump_file(argv[i], source);
  return status;
}
