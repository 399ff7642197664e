// cli.c: what the tools say when getopt_long refuses an argument.  Part of
// support/; tspc, tsp-as, tsp-objdump and tsp-emu share it, so that one
// mistake reads the same in each.
#include "support.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

// The long options whose names start with the len bytes of name (every
// one that fits, ", "-separated, into buf, then "..."); returns how many,
// or -1 when one is name exactly (getopt_long takes an exact name over its
// longer ones).
static int options_starting(const char *name, size_t len, const struct option *longopts, char *buf, size_t n) {
  int count = 0;
  size_t used = 0;
  bool full = false;
  buf[0] = '\0';
  for (const struct option *o = longopts; o->name; o++) {
    if (strncmp(o->name, name, len)) continue;
    if (strlen(o->name) == len) return -1;
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

// The long option named exactly by the len bytes of name, or NULL.
static const struct option *named(const char *name, size_t len, const struct option *longopts) {
  for (const struct option *o = longopts; o->name; o++)
    if (strlen(o->name) == len && !strncmp(o->name, name, len)) return o;
  return NULL;
}

// getopt_long reports in optopt (short_opt) a short option it does not
// know, the val of a long option given a value it does not take, and 0 for
// a long option it does not know or cannot tell from others.  arg, the
// argument before optind, is the short option's group only when the
// option was its last letter (-Zq names -Z while optind still stands on
// the group), so short_opt is what names a short option.
const char *cli_bad_option(const char *arg, int short_opt, const struct option *longopts, char *buf, size_t n) {
  const char *name = arg + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  if (!strncmp(arg, "--", 2) && len > 0) {
    char names[256];
    int matches = options_starting(name, len, longopts, names, sizeof names);
    const struct option *o = matches == -1 ? named(name, len, longopts) : NULL;
    if (matches == 1)
      for (const struct option *p = longopts; p->name; p++)
        if (!strncmp(p->name, name, len)) o = p;
    if (o && eq && o->has_arg == no_argument && o->val == short_opt) {
      snprintf(buf, n, "option '--%s' takes no value", o->name);
      return buf;
    }
    if (short_opt == 0) {
      if (matches > 1)
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
