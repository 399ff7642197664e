// tsp-as.c: the assembler driver.  Reads hand-written device programs
// (frontend/asm.c), checks them against the topology, and writes an output
// directory that tsp-emu runs (backend/outdir.c): manifest.yaml, a copy of
// the topology and one devNNNN.tsp per device.
//
//   tsp-as PROG.tsa -t TOPOLOGY.yaml -o DIR
//
// Exit status: 0 on success, 1 on any error.
#include "../backend/backend.h"

#include <getopt.h>
#include <stdlib.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: tsp-as PROG.tsa -t TOPOLOGY.yaml -o DIR\n"
          "\n"
          "  -t, --topology FILE   the system the programs run on\n"
          "  -o, --output DIR      where to write manifest.yaml and devNNNN.tsp\n"
          "      --max-errors=N    stop reporting after N errors (default %d; 0: no limit)\n"
          "      --version, --help\n"
          "\n"
          "The assembly syntax is in docs/isa.md.\n",
          DIAG_DEFAULT_MAX_ERRORS);
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {{"topology", required_argument, 0, 't'},
                                           {"output", required_argument, 0, 'o'},
                                           {"version", no_argument, 0, 'V'},
                                           {"max-errors", required_argument, 0, 'm'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  const char *topo_path = NULL, *out = NULL;
  Diag d;
  diag_init(&d, stderr);
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":t:o:h", longopts, NULL)) != -1;) {
    switch (ch) {
    case 't': topo_path = optarg; break;
    case 'o': out = optarg; break;
    case 'V': printf("tsp-as %s\n", TSPC_VERSION); return 0;
    case 'm': {
      int64_t n;
      if (!str_to_i64(optarg, &n) || n < 0 || n > 1000000) {
        diag_tool_error(&d, "tsp-as", "--max-errors needs a count from 0 to 1000000, got '%s'", optarg);
        return 1;
      }
      d.max_errors = (int)n;
      break;
    }
    case 'h': usage(stdout); return 0;
    case ':': diag_tool_error(&d, "tsp-as", "option '%s' needs a value", argv[optind - 1]); return 1;
    default: {
      char why[512];
      diag_tool_error(&d, "tsp-as", "%s", cli_bad_option(argv[optind - 1], optopt, longopts, why, sizeof why));
      return 1;
    }
    }
  }
  if (optind != argc - 1 || !topo_path || !out) {
    diag_tool_error(&d, "tsp-as", "give one PROG.tsa, -t TOPOLOGY.yaml and -o DIR (try --help)");
    return 1;
  }
  Arena a = {0};
  int status = 1;
  const char *err;
  Topology *t = fe_load_topology(&a, &d, "tsp-as", topo_path);
  SrcFile *src = t ? src_read(&a, argv[optind], &err) : NULL;
  if (t && !src) diag_tool_error(&d, "tsp-as", "cannot read '%s': %s", argv[optind], err);
  Program *p = src ? fe_assemble(&a, &d, src, t) : NULL;
  if (p) {
    ManifestInfo m = {.tool = "tsp-as", .source = src, .topo = t, .program = p};
    status = be_write_outdir(&m, out, &d) ? 0 : 1;
  }
  arena_free(&a);
  return status;
}
