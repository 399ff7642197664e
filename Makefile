# tspc: the whole build in one plain Makefile.
#
#   make              build bin/tspc (release: -O2, warnings are errors), and
#                     bin/tsp-emu-mpi when mpicc is found (the emulator on MPI)
#   make check        install missing packages, build release and ASan+UBSan
#                     variants, run every unit and lit test on both, and the
#                     threaded emulator's tests on a ThreadSanitizer build
#   make demo         install, build, describe rack72, compile and run an
#                     allreduce on it, and an MLP on one TSP
#   make install      the four tools, their manual pages (mandir/man1),
#                     docs/ (docdir) and the example models and topologies
#                     (datadir/examples); PREFIX/prefix, bindir, mandir,
#                     docdir, datadir and DESTDIR are honoured
#   make VARIANT=asan the sanitizer build, into build/asan/bin
#   make VARIANT=tsan the ThreadSanitizer build, into build/tsan/bin
#   make fuzz         libFuzzer (clang, ASan+UBSan) on the whole .tg pipeline,
#                     the topology loader, the assembler, the binary loader,
#                     the manifest reader and the .npy reader, FUZZ_SECONDS
#                     each (60), one process
#
# Generated parser and scanner sources are build outputs under build/.

# Build on every core unless the caller chose (-j N on the command line or
# in MAKEFLAGS): make check's two builds are a minute each serially.
# (Set at the top level only: sub-makes share its job server.)
NPROC    := $(shell nproc 2>/dev/null || echo 1)
ifeq ($(MAKELEVEL),0)
  ifeq ($(filter -j%,$(MAKEFLAGS)),)
    MAKEFLAGS += -j$(NPROC)
  endif
endif

CC       ?= cc
VARIANT  ?= release
PREFIX   ?= /usr/local
prefix   ?= $(PREFIX)
bindir   ?= $(prefix)/bin
docdir   ?= $(prefix)/share/doc/tspc
datadir  ?= $(prefix)/share/tspc
mandir   ?= $(prefix)/share/man
PKG_CONFIG ?= pkg-config

ifeq ($(VARIANT),asan)
  OPT    := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
            -DTSPC_VERIFY_BY_DEFAULT=1
  BINDIR := build/asan/bin
else ifeq ($(VARIANT),release)
  OPT    := -O2 -g
  BINDIR := bin
else ifeq ($(VARIANT),tsan)
  OPT    := -O1 -g -fsanitize=thread
  BINDIR := build/tsan/bin
else ifeq ($(VARIANT),fuzz)
  CC     := clang
  OPT    := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
  BINDIR := build/fuzz/bin
else
  $(error VARIANT must be release, asan, tsan or fuzz)
endif

OBJ      := build/$(VARIANT)
GEN      := $(OBJ)/gen
YAML_CFLAGS := $(shell $(PKG_CONFIG) --cflags yaml-0.1 2>/dev/null)
YAML_LIBS   := $(shell $(PKG_CONFIG) --libs yaml-0.1 2>/dev/null || echo -lyaml)
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null || echo -lcmocka)
# libdeflate: the binaries' CRC-32 (zlib's polynomial, folded with PCLMUL:
# about 4x zlib's crc32 here, 2 ms of a rack72 256 MiB ring compile).
DEFLATE_CFLAGS := $(shell $(PKG_CONFIG) --cflags libdeflate 2>/dev/null)
DEFLATE_LIBS   := $(shell $(PKG_CONFIG) --libs libdeflate 2>/dev/null || echo -ldeflate)
# OpenBLAS: the emulator's matrix unit and the reference's matmul (dgemm).
BLAS_CFLAGS := $(shell $(PKG_CONFIG) --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell $(PKG_CONFIG) --libs openblas 2>/dev/null || echo -lopenblas)

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -I$(GEN) -Ifrontend $(YAML_CFLAGS) $(DEFLATE_CFLAGS) $(BLAS_CFLAGS)
# -pthread: tsp-emu runs its windows on threads (runtime/window.c).
ALL_CFLAGS = -std=c11 -pthread $(WARN) $(OPT) $(CFLAGS)
LDLIBS   += $(YAML_LIBS) $(DEFLATE_LIBS) $(BLAS_LIBS) -lm -pthread

# ---- sources ---------------------------------------------------------------
RUNTIME_SRCS := $(wildcard runtime/*.c)
LIB_SRCS := $(wildcard support/*.c ir/*.c frontend/*.c passes/*.c backend/*.c) $(RUNTIME_SRCS)
LIB_OBJS := $(LIB_SRCS:%.c=$(OBJ)/%.o) $(GEN)/parser.tab.o $(GEN)/lexer.yy.o
LIB      := $(OBJ)/libtspc.a
TOOLS    := tspc tsp-as tsp-emu tsp-objdump
UNIT_SRCS := $(wildcard test/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:test/unit/%.c=$(OBJ)/test/%)

.PHONY: all tools unit check demo deps install install-files clean fuzz fuzzers
all: tools unit
tools: $(TOOLS:%=$(BINDIR)/%)
unit: $(UNIT_BINS)

# ---- generated scanner and parser -------------------------------------------
$(GEN)/parser.tab.c $(GEN)/parser.tab.h &: frontend/parser.y
	@mkdir -p $(GEN)
	bison -Wall -Werror --defines=$(GEN)/parser.tab.h -o $(GEN)/parser.tab.c $<

$(GEN)/lexer.yy.c $(GEN)/lexer.yy.h &: frontend/lexer.l $(GEN)/parser.tab.h
	@mkdir -p $(GEN)
	flex --header-file=$(GEN)/lexer.yy.h -o $(GEN)/lexer.yy.c $<

# flex's skeleton trips a few warnings that are not ours to fix.
GEN_CFLAGS := -Wno-unused-function -Wno-sign-compare -Wno-missing-prototypes
$(GEN)/%.o: $(GEN)/%.c
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(GEN_CFLAGS) -c $< -o $@

$(OBJ)/frontend/parse.o: $(GEN)/parser.tab.h $(GEN)/lexer.yy.h

# ---- objects, library, tools ---------------------------------------------------
$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(AR) rcs $@ $^

$(BINDIR)/%: $(OBJ)/tools/%.o $(LIB)
	@mkdir -p $(BINDIR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OBJ)/test/%: $(OBJ)/test/unit/%.o $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ $(LDLIBS) $(CMOCKA_LIBS) -o $@

# ---- the distributed emulator, when MPI is there -----------------------------------
# bin/tsp-emu-mpi: tools/tsp-emu.c and runtime/ again, by mpicc with
# -DTSP_EMU_MPI (runtime/ranks.c makes the MPI calls); mpirun starts it.
# Without mpicc nothing here is built, and nothing else needs MPI.
MPICC := $(shell command -v mpicc 2>/dev/null)
ifeq ($(VARIANT)$(if $(MPICC),yes),releaseyes)
MPI_OBJS := $(RUNTIME_SRCS:%.c=$(OBJ)/mpi/%.o) $(OBJ)/mpi/tools/tsp-emu.o
tools: $(BINDIR)/tsp-emu-mpi
$(OBJ)/mpi/%.o: %.c
	@mkdir -p $(dir $@)
	$(MPICC) $(CPPFLAGS) $(ALL_CFLAGS) -DTSP_EMU_MPI -MMD -MP -c $< -o $@
$(BINDIR)/tsp-emu-mpi: $(MPI_OBJS) $(LIB)
	@mkdir -p $(BINDIR)
	$(MPICC) $(ALL_CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@
endif

# ---- fuzzing (VARIANT=fuzz) ------------------------------------------------------
FUZZERS := $(patsubst test/fuzz/%.c,$(OBJ)/fuzz/%,$(wildcard test/fuzz/fuzz_*.c))
fuzzers: $(FUZZERS)
$(OBJ)/fuzz/%: $(OBJ)/test/fuzz/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer $^ $(LDLIBS) -o $@

# make fuzz: the six targets one after another, FUZZ_SECONDS each, one
# process (no -jobs), from the corpora test/fuzz/corpora.sh writes under
# build/fuzz; what they find is kept in build/fuzz/found-NAME.  An input
# slower than -timeout seconds is reported as a failure; crash and timeout
# inputs are saved as build/fuzz/NAME-crash-HASH (and -timeout-, -leak-).
FUZZ_SECONDS ?= 60
FUZZ_RUN = build/fuzz/fuzz/fuzz_$(1) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=build/fuzz/$(1)- $(3) \
  build/fuzz/found-$(2) build/fuzz/corpus-$(2)
fuzz:
	@scripts/install-deps.sh clang libclang-rt-14-dev
	$(MAKE) VARIANT=release tools
	$(MAKE) VARIANT=fuzz fuzzers
	test/fuzz/corpora.sh
	$(call FUZZ_RUN,tg,tg,-timeout=1 -dict=test/fuzz/dsl.dict -max_len=4096)
	$(call FUZZ_RUN,topology,yaml,-timeout=10 -dict=test/fuzz/yaml.dict -max_len=4096)
	$(call FUZZ_RUN,asm,tsa,-timeout=1 -max_len=16384)
	$(call FUZZ_RUN,loader,tsp,-timeout=1 -max_len=16384)
	$(call FUZZ_RUN,manifest,manifest,-timeout=1 -dict=test/fuzz/manifest.dict -max_len=4096)
	$(call FUZZ_RUN,npy,npy,-timeout=1 -dict=test/fuzz/npy.dict -max_len=4096)

-include $(shell find $(OBJ) -name '*.d' -type f 2>/dev/null)

# ---- the newcomer's commands ----------------------------------------------------
deps:
	@scripts/install-deps.sh

check: deps
	$(MAKE) VARIANT=release all
	$(MAKE) VARIANT=asan all
	$(MAKE) VARIANT=tsan tools
	test/run-tests.sh

demo: deps
	$(MAKE) VARIANT=release tools
	bin/tspc -t examples/rack72.yaml --describe
	bin/tspc examples/allreduce.tg -t examples/rack72.yaml -o out/allreduce --dump-after=check --stats
	@echo "demo: wrote out/allreduce: 72 device binaries and manifest.yaml"
	bin/tsp-emu out/allreduce
	bin/tsp-emu out/allreduce --jitter on --drift-ppm 100 --start-skew 5000 --report out/allreduce-report.yaml
	bin/tspc examples/mlp1.tg -t examples/one.yaml -o out/mlp1 --stats 2>&1 | grep -A1 units
	bin/tsp-emu out/mlp1

install: tools
	$(MAKE) install-files

# The copying alone, from what is built (cli/make-install.test runs it
# while other tests use bin/, so it must never rebuild).
install-files:
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(docdir) $(DESTDIR)$(datadir)/examples
	install -m 755 $(TOOLS:%=$(BINDIR)/%) $(DESTDIR)$(bindir)
	install -d $(DESTDIR)$(docdir)/img
	install -m 644 README.md docs/*.md $(DESTDIR)$(docdir)
	install -m 644 docs/img/* $(DESTDIR)$(docdir)/img
	install -m 644 examples/*.tg examples/*.yaml $(DESTDIR)$(datadir)/examples
	install -d $(DESTDIR)$(mandir)/man1
	install -m 644 docs/man/*.1 $(DESTDIR)$(mandir)/man1

clean:
	rm -rf build bin out
