# lit configuration for tspc's end-to-end tests.
#
# Each test is a source file (.tg, .yaml, .test) whose RUN: lines drive the
# tools and whose CHECK: lines FileCheck matches against their output.
# Parameters:  -Dbindir=DIR  the tools to test (bin/ or build/asan/bin/)
import os
import lit.formats

config.name = 'tspc'
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = ['.tg', '.yaml', '.test', '.tsa']
config.excludes = ['Inputs']
config.test_source_root = os.path.dirname(__file__)

root = os.path.abspath(os.path.join(config.test_source_root, '..', '..'))
bindir = os.path.abspath(lit_config.params.get('bindir', os.path.join(root, 'bin')))
config.test_exec_root = os.path.join(root, 'build', 'lit', os.path.basename(os.path.dirname(bindir)) + '-' + os.path.basename(bindir))

config.substitutions.append(('%tspc', os.path.join(bindir, 'tspc')))
config.substitutions.append(('%tsp-as', os.path.join(bindir, 'tsp-as')))
config.substitutions.append(('%tsp-emu', os.path.join(bindir, 'tsp-emu')))
config.substitutions.append(('%tsp-objdump', os.path.join(bindir, 'tsp-objdump')))
config.substitutions.append(('%examples', os.path.join(root, 'examples')))
config.substitutions.append(('%bindir', bindir))
config.substitutions.append(('%root', root))
config.substitutions.append(('%inputs', os.path.join(config.test_source_root, 'Inputs')))
# %exit N CMD: runs CMD and fails unless it exits with status N.
config.substitutions.append(('%exit', os.path.join(config.test_source_root, 'expect-exit')))

llvm_bin = '/usr/lib/llvm-14/bin'
config.environment['PATH'] = os.pathsep.join([llvm_bin, os.environ.get('PATH', '')])
# Sanitizer findings must never pass for an expected exit status of 1.
config.environment['ASAN_OPTIONS'] = 'exitcode=86:detect_leaks=1:abort_on_error=0'
config.environment['UBSAN_OPTIONS'] = 'halt_on_error=1:exitcode=87:print_stacktrace=1'
config.environment['LSAN_OPTIONS'] = 'exitcode=88'
config.environment['TSAN_OPTIONS'] = 'halt_on_error=1:exitcode=89'  # the ThreadSanitizer build (make check)
# The release build: tests too slow under the sanitizers (a whole BERT
# layer emulated) say REQUIRES: release.
if os.path.basename(os.path.dirname(bindir)) != 'asan':
    config.available_features.add('release')
# bin/tsp-emu-mpi is built when mpicc is there (scripts/install-deps.sh
# installs it); its tests say REQUIRES: mpi, and are skipped without it.
import shutil
if os.path.exists(os.path.join(bindir, 'tsp-emu-mpi')) and shutil.which('mpirun'):
    config.available_features.add('mpi')
config.substitutions.append(('%mpi-same', os.path.join(config.test_source_root, 'Inputs', 'mpi', 'same.sh') + ' ' + bindir))
