// cli.c: what the tools say when getopt_long refuses an argument.  Part of
// support/; tspc, tsp-as, tsp-objdump and tsp-emu share it, so that one
// mistake reads the same in each.
#include "support.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

// The long options whose names start with the len bytes of name (every
// one that fits, ", "-separated, into buf, then "..."); returns how many.
static int options_starting(const char *name, size_t len, const struct option *longopts, char *buf, size_t n) {
  int count = 0;
  size_t used = 0;
  bool full = false;
  buf[0] = '\0';
  for (const struct option *o = longopts; o->name; o++) {
    if (strncmp(o->name, name, len)) continue;
    count++;
    if (full) continue;
    int w = snprintf(buf + used, n - used, "%s--%s", count > 1 ? ", " : "", o->name);
    if (w > 0 && (size_t)w < n - used - 5) {  // room kept for ", ..."
      used += (size_t)w;
    } else {
      snprintf(buf + used, n - used, ", ...");
      full = true;
    }
  }
  return count;
}

// The long option the len bytes of name stand for, as getopt_long reads
// them: the one of that exact name, else the only one they begin; NULL
// when none or several do.
static const struct option *abbreviated(const char *name, size_t len, const struct option *longopts) {
  const struct option *only = NULL;
  int n = 0;
  for (const struct option *o = longopts; o->name; o++) {
    if (strncmp(o->name, name, len)) continue;
    if (strlen(o->name) == len) return o;
    only = o, n++;
  }
  return n == 1 ? only : NULL;
}

// getopt_long reports in optopt (short_opt) a short option it does not
// know, the val of a long option given a value it does not take, and 0 for
// a long option it does not know or cannot tell from others.  arg, the
// argument before optind, is the short option's group only when the
// option was its last letter (-Zq names -Z while optind still stands on
// the group, and arg is whatever came before), so short_opt is what names
// a short option.
const char *cli_bad_option(const char *arg, int short_opt, const struct option *longopts, char *buf, size_t n) {
  if (!strncmp(arg, "--", 2) && arg[2] && arg[2] != '=') {
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option *o = abbreviated(name, len, longopts);
    if (o && eq && o->has_arg == no_argument && o->val == short_opt) {
      snprintf(buf, n, "option '--%s' takes no value", o->name);
      return buf;
    }
    if (short_opt == 0) {
      char names[256];
      if (!o && options_starting(name, len, longopts, names, sizeof names) > 1)
        snprintf(buf, n, "option '--%.*s' is ambiguous: %s", (int)len, name, names);
      else
        snprintf(buf, n, "unknown option '--%.*s' (try --help)", (int)len, name);
      return buf;
    }
  }
  if (short_opt > 0 && short_opt < 256)
    snprintf(buf, n, "unknown option '-%c' (try --help)", short_opt);
  else
    snprintf(buf, n, "unknown option '%s' (try --help)", arg);
  return buf;
}
