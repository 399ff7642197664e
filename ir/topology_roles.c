// topology_roles.c: the hot spare (seed 002 s4.5: "N+1 redundancy by
// provisioning a hot spare node in every deployed rack").  Part of ir/;
// the topology loader builds the service table once spare_nodes,
// failed_nodes and failed_devices are read, and every later layer reads it.
//
// A *unit* is what fails and what stands in: a dragonfly's node (the
// dragonfly is node symmetric, so a spare node can play any node of its
// rack), a single device in every other family (where the whole system is
// one rack).  A failed device's cables are failed (Link.failed), so the
// router, the alignment tree and every algorithm avoid them.  Each failed
// unit, in ascending order, takes the first spare of its rack, in
// spare_nodes order, that no other took; a failed unit with no spare left
// is dropped (the smaller system).  Device ids in a .tg are logical: the
// role a device plays.  Logical id L on a failed unit is played by the
// device with the same index in its stand-in; L on a spare is no role at
// all; every other L is played by device L itself.
#include "ir.h"

#include <string.h>

int ir_device_unit(const Topology *t, int device) {
  return t->family == FAMILY_DRAGONFLY ? device / t->df.tsps_per_node : device;
}

// Devices in one unit, and the rack a unit belongs to.
static int unit_size(const Topology *t) { return t->family == FAMILY_DRAGONFLY ? t->df.tsps_per_node : 1; }
static int unit_count(const Topology *t) { return t->ndevices / unit_size(t); }
static int unit_rack(const Topology *t, int unit) {
  return t->family == FAMILY_DRAGONFLY ? unit / t->df.nodes_per_rack : 0;
}

static bool unit_is_spare(const Topology *t, int unit) {
  for (int i = 0; i < t->nspares; i++)
    if (t->spare_nodes[i] == unit) return true;
  return false;
}

const Role *ir_failed_role(const Topology *t, int unit) {
  int lo = 0, hi = t->nroles;  // roles are ascending by unit: a binary search
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (t->roles[mid].failed < unit) lo = mid + 1;
    else hi = mid;
  }
  return lo < t->nroles && t->roles[lo].failed == unit ? &t->roles[lo] : NULL;
}

// The role a spare unit plays, or NULL when it stands by.
static const Role *role_of_spare(const Topology *t, int unit) {
  for (int i = 0; i < t->nroles; i++)
    if (t->roles[i].spare == unit) return &t->roles[i];
  return NULL;
}

// Marks every device listed in failed_devices, or on a node in failed_nodes.
static void mark_failed_devices(Topology *t) {
  int per = unit_size(t);
  for (int i = 0; i < t->nfailed_nodes; i++)
    for (int k = 0; k < per; k++) t->device_failed[t->failed_nodes[i] * per + k] = true;
  for (int i = 0; i < t->nfailed_devices; i++) t->device_failed[t->failed_devices[i]] = true;
}

// Every cable touching a failed device fails too.
static void fail_cables(Topology *t) {
  for (int i = 0; i < t->links.len; i++) {
    Link *l = &t->links.data[i];
    if (l->failed || !(t->device_failed[l->a] || t->device_failed[l->b])) continue;
    l->failed = true;
    t->nfailed++;
  }
}

// The failed units, ascending, each with the first free spare of its
// rack; role_at[u]: unit u's index in t->roles (-1: it has not failed).
static void pair_spares(Topology *t, Arena *a, int *role_at) {
  int nunits = unit_count(t), per = unit_size(t), count = 0;
  bool *failed = ARENA_ARRAY(a, bool, nunits);
  for (int d = 0; d < t->ndevices; d++)
    if (t->device_failed[d] && !failed[d / per]) failed[d / per] = true, count++;
  // Per rack, a cursor into spare_nodes: the spares before it are taken or
  // in other racks, so the list is walked once a rack.
  int racks = unit_rack(t, nunits - 1) + 1, *cursor = ARENA_ARRAY(a, int, racks);
  t->roles = ARENA_ARRAY(a, Role, count + 1);
  for (int u = 0; u < nunits; u++) {
    role_at[u] = -1;
    if (!failed[u]) continue;
    Role r = {.failed = u, .spare = -1};
    int rack = unit_rack(t, u);
    for (int *i = &cursor[rack]; *i < t->nspares && r.spare < 0; ++*i) {
      int s = t->spare_nodes[*i];
      if (unit_rack(t, s) == rack) r.spare = s;
    }
    role_at[u] = t->nroles;
    t->roles[t->nroles++] = r;
  }
}

void ir_topo_assign_roles(Topology *t, Arena *a) {
  int n = t->ndevices, per = unit_size(t), nunits = unit_count(t);
  t->device_failed = ARENA_ARRAY(a, bool, n);
  t->in_service = ARENA_ARRAY(a, bool, n);
  t->role_device = ARENA_ARRAY(a, int, n);
  bool *spare = ARENA_ARRAY(a, bool, nunits);
  int *role_at = ARENA_ARRAY(a, int, nunits);
  for (int i = 0; i < t->nspares; i++) spare[t->spare_nodes[i]] = true;
  mark_failed_devices(t);
  fail_cables(t);
  pair_spares(t, a, role_at);
  t->nin_service = 0;
  for (int l = 0; l < n; l++) {
    int unit = l / per;
    const Role *r = role_at[unit] >= 0 ? &t->roles[role_at[unit]] : NULL;
    int d = spare[unit] ? -1 : !r ? l : r->spare < 0 ? -1 : r->spare * per + l % per;
    t->role_device[l] = d;
    if (d >= 0) t->in_service[d] = true, t->nin_service++;
  }
}

bool ir_device_failed(const Topology *t, int device) { return t->device_failed && t->device_failed[device]; }

bool ir_device_in_service(const Topology *t, int device) { return !t->in_service || t->in_service[device]; }

int ir_role_device(const Topology *t, int logical) { return t->role_device ? t->role_device[logical] : logical; }

bool ir_role_dropped(const Topology *t, int logical) {
  const Role *r = t->role_device ? ir_failed_role(t, ir_device_unit(t, logical)) : NULL;
  return r && r->spare < 0;
}

const char *ir_role_refusal(Arena *a, const Topology *t, int logical) {
  int unit = ir_device_unit(t, logical), per = unit_size(t);
  bool df = t->family == FAMILY_DRAGONFLY;
  if (unit_is_spare(t, unit)) {
    const Role *r = role_of_spare(t, unit);
    if (!r)
      return df ? arena_printf(a, "is on spare node %d: a spare runs only in place of a failed node", unit)
                : "is a spare: a spare runs only in place of a failed device";
    int role = r->failed * per + logical % per;
    return df ? arena_printf(a, "is on spare node %d, which stands in for failed node %d: name the role it plays, "
                                "device(%d)", unit, r->failed, role)
              : arena_printf(a, "is a spare standing in for failed device %d: name the role it plays, device(%d)",
                             r->failed, role);
  }
  if (df)
    return arena_printf(a, "is on failed node %d, and rack %d has no spare node left to stand in for it", unit,
                        unit_rack(t, unit));
  return "has failed, and no spare device is left to stand in for it";
}

void ir_roles_format(const Topology *t, Buf *out) {
  const char *unit = t->family == FAMILY_DRAGONFLY ? "node" : "device";
  buf_printf(out, "[");
  for (int i = 0; i < t->nroles; i++) {
    buf_printf(out, "%s{%s: %d, spare: ", i ? ", " : "", unit, t->roles[i].failed);
    if (t->roles[i].spare < 0)
      buf_printf(out, "null}");
    else
      buf_printf(out, "%d}", t->roles[i].spare);
  }
  buf_printf(out, "]");
}
