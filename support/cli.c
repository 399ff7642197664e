// cli.c: what the tools say when getopt_long refuses an argument.  Part of
// support/; tspc, tsp-as, tsp-objdump and tsp-emu share it, so that one
// mistake reads the same in each.
#include "support.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

// The long options whose names start with the len bytes of name (every
// one, ", "-separated, into buf); returns how many, or -1 when one is
// name exactly (getopt_long takes an exact name over its longer ones).
static int options_starting(const char *name, size_t len, const struct option *longopts, char *buf, size_t n) {
  int count = 0;
  size_t used = 0;
  buf[0] = '\0';
  for (const struct option *o = longopts; o->name; o++) {
    if (strncmp(o->name, name, len)) continue;
    if (strlen(o->name) == len) return -1;
    int w = snprintf(buf + used, n - used, "%s--%s", count ? ", " : "", o->name);
    if (w > 0 && (size_t)w < n - used) used += (size_t)w;
    count++;
  }
  return count;
}

const char *cli_bad_option(const char *arg, int short_opt, const struct option *longopts, char *buf, size_t n) {
  if (strncmp(arg, "--", 2)) {  // a short option, alone or in a group (-qz): the one refused
    snprintf(buf, n, "unknown option '-%c' (try --help)", short_opt > 0 && short_opt < 256 ? short_opt : '?');
    return buf;
  }
  const char *name = arg + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  char names[256];
  int matches = options_starting(name, len, longopts, names, sizeof names);
  const struct option *exact = NULL;
  for (const struct option *o = longopts; o->name && matches != 0; o++)
    if (matches == -1 ? strlen(o->name) == len && !strncmp(o->name, name, len)
                      : matches == 1 && !strncmp(o->name, name, len))
      exact = o;
  if (exact && eq && exact->has_arg == no_argument)
    snprintf(buf, n, "option '--%s' takes no value", exact->name);
  else if (matches > 1)
    snprintf(buf, n, "option '--%.*s' is ambiguous: %s", (int)len, name, names);
  else
    snprintf(buf, n, "unknown option '--%.*s' (try --help)", (int)len, name);
  return buf;
}
