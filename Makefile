# tensortrace — make · make test · make lesson · make lessons · make figures · make golden
#               make layers · make report · make test-browser · make bench · make asan · make memcheck · make module
#               make install · make uninstall · make clean
.PHONY: all test layers lesson lessons figures golden report test-browser bench asan memcheck module install uninstall \
        clean deps check-deps check-test-deps

CC      ?= cc
CFLAGS  ?= -O2 -g
PREFIX  ?= /usr/local
LUA_PC  ?= $(shell for p in lua5.4 lua-5.4 lua54 lua; do pkg-config --exists $$p 2>/dev/null && \
             pkg-config --atleast-version=5.4 $$p 2>/dev/null && { echo $$p; break; }; done)
PNG_PC  ?= libpng
SIMD    ?= 1
BUILD   ?= build

WARN    = -std=c11 -Wall -Wextra -pedantic -Wshadow -Wundef -Wwrite-strings \
          -Wmissing-prototypes -Wstrict-prototypes -Wdouble-promotion
ifeq ($(CI),true)
WARN   += -Werror
endif
DEFS    = -D_XOPEN_SOURCE=700
ifeq ($(SIMD),0)
DEFS   += -DTT_NO_SIMD
endif
LUA_CFLAGS = $(shell pkg-config --cflags $(LUA_PC) 2>/dev/null)
PNG_CFLAGS = $(shell pkg-config --cflags $(PNG_PC) 2>/dev/null)
PNG_LIBS   = $(shell pkg-config --libs $(PNG_PC) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(LUA_PC) $(PNG_PC) 2>/dev/null)
# Line editing and history in the REPL when readline is there (optional).
READLINE  ?= $(shell pkg-config --exists readline 2>/dev/null && echo 1)
ifeq ($(READLINE),1)
MAIN_CFLAGS = -DTT_HAVE_READLINE $(filter-out -D%,$(shell pkg-config --cflags readline))
MAIN_LIBS   = $(shell pkg-config --libs readline)
endif
# The core sees neither Lua's headers nor (outside core/figure) libpng's:
# the layers (core/README.md, How the code is laid out; checked by make layers).
# -MMD: each object also depends on exactly the headers it includes.
BASE_CFLAGS = $(WARN) $(DEFS) $(CFLAGS) -Icore -pthread -MMD -MP
CORE_CFLAGS = $(BASE_CFLAGS)
FIG_CFLAGS  = $(BASE_CFLAGS) $(PNG_CFLAGS)
LUA_SIDE_CFLAGS = $(BASE_CFLAGS) $(LUA_CFLAGS) $(PNG_CFLAGS) -Icore/figure
LDLIBS      = $(PKG_LIBS) -lm -pthread
CORE_LDLIBS = $(PNG_LIBS) -lm -pthread

# Lowest layer first; each folder may use only the ones before it.
LAYERS   = base kernel tensor trace ops figure
CORE_SRC = $(foreach l,$(LAYERS),$(wildcard core/$(l)/*.c))
LUA_SRC  = $(wildcard lua/*.c)
CORE_OBJ = $(CORE_SRC:%.c=$(BUILD)/%.o)
LUA_OBJ  = $(LUA_SRC:%.c=$(BUILD)/%.o)
CTEST_SRC = $(wildcard tests/test_*.c)
CTEST_BIN = $(CTEST_SRC:tests/%.c=$(BUILD)/tests/%)

all: check-deps tensortrace

# Lua 5.4 and libpng come from the system; install them when missing. The
# tests also run a stock lua5.4 interpreter (the tt.so module test), so
# `make test` checks for it as well: the README's two commands are all a
# fresh machine needs.
check-deps:
	@if [ -z "$(LUA_PC)" ] || ! pkg-config --exists $(PNG_PC) 2>/dev/null; then \
	    $(MAKE) --no-print-directory deps; fi

check-test-deps: check-deps
	@command -v lua5.4 >/dev/null 2>&1 || $(MAKE) --no-print-directory deps

deps:
	@need=""; \
	if ! command -v pkg-config >/dev/null 2>&1; then need="pkg-config"; fi; \
	if [ -z "$(LUA_PC)" ]; then need="$$need lua"; fi; \
	if ! pkg-config --exists $(PNG_PC) 2>/dev/null; then need="$$need png"; fi; \
	if ! command -v lua5.4 >/dev/null 2>&1; then need="$$need lua5.4"; fi; \
	[ -z "$$need" ] && { echo "deps: Lua 5.4, libpng and the lua5.4 interpreter found"; exit 0; }; \
	sudo=""; [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"; \
	if command -v apt-get >/dev/null 2>&1; then \
	    cmd="$$sudo apt-get install -y liblua5.4-dev libpng-dev pkg-config lua5.4"; \
	    echo "deps: missing:$$need; running: $$sudo apt-get update && $$cmd"; \
	    $$sudo apt-get update -qq && $$cmd; \
	elif command -v dnf >/dev/null 2>&1; then \
	    cmd="$$sudo dnf install -y lua lua-devel libpng-devel pkgconf-pkg-config"; echo "deps: running: $$cmd"; $$cmd; \
	elif command -v brew >/dev/null 2>&1; then \
	    cmd="brew install lua libpng pkg-config"; echo "deps: running: $$cmd"; $$cmd; \
	else \
	    echo "deps: missing:$$need. Install Lua 5.4 (library, headers and interpreter), libpng"; \
	    echo "      development files and pkg-config, e.g."; \
	    echo "      'apt-get install liblua5.4-dev libpng-dev pkg-config lua5.4'"; exit 1; \
	fi

tensortrace: $(CORE_OBJ) $(LUA_OBJ)
	$(CC) $(BASE_CFLAGS) -o $@ $^ $(LDLIBS) $(MAIN_LIBS)

# Objects: the folder picks the flags. $(1) is the output folder, $(2)
# extra flags.
define OBJ_RULES
$(1)/core/%.o: core/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CORE_CFLAGS) $(2) -c -o $$@ $$<
$(1)/core/figure/%.o: core/figure/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(FIG_CFLAGS) $(2) -c -o $$@ $$<
$(1)/lua/%.o: lua/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LUA_SIDE_CFLAGS) $(2) -c -o $$@ $$<
endef
# tt.so is one file at the root, always from the normal flags: its PIC
# objects stay in build/pic whatever BUILD says (variant-test links that
# folder into its root, so a make run by a test there finds tt.so current).
PIC_BUILD = build/pic
$(eval $(call OBJ_RULES,$(BUILD),))
$(eval $(call OBJ_RULES,$(PIC_BUILD),-fPIC))

$(BUILD)/lua/main.o: lua/main.c
	@mkdir -p $(dir $@)
	$(CC) $(LUA_SIDE_CFLAGS) $(MAIN_CFLAGS) -c -o $@ $<

# `tt` as a Lua C module for a stock lua5.4: require "tt". Its own PIC
# objects, so a change rebuilds only the files it touches.
MODULE_SRC = $(CORE_SRC) $(filter-out lua/main.c,$(LUA_SRC))
MODULE_OBJ = $(MODULE_SRC:%.c=$(PIC_BUILD)/%.o)
module: check-deps tt.so
tt.so: $(MODULE_OBJ)
	$(CC) $(BASE_CFLAGS) -shared -o $@ $(MODULE_OBJ) $(CORE_LDLIBS)

# C tests of the core: no Lua anywhere near them.
$(BUILD)/tests/%: tests/%.c $(CORE_OBJ) tests/check.h
	@mkdir -p $(dir $@)
	$(CC) $(FIG_CFLAGS) -Itests -o $@ $< $(CORE_OBJ) $(CORE_LDLIBS)

# Every C test, Lua test, lesson, golden trace and figure; ends "N passed, N failed".
test: check-test-deps all $(CTEST_BIN) $(BUILD)/tests/pngcmp tt.so
	@sh tests/run.sh $(BUILD)

# Each core folder uses only the layers below it (core/README.md, How the
# code is laid out): includes and, from the objects, calls. Known exceptions are
# listed in tests/layers.known. make test runs it as tests/test_layers.sh.
layers: $(CORE_OBJ) $(LUA_OBJ)
	@sh tests/layers.sh . $(BUILD)

# The README's first command: the causal-mask lesson with its trace.
lesson: all
	./tensortrace lessons/03_causal_mask.lua

lessons: all
	@for f in lessons/*.lua; do ./tensortrace "$$f" || exit 1; done

# Regenerates every figure in images/ (the golden traces are make golden's).
figures: all
	@for f in lessons/*.lua; do echo "$$f"; ./tensortrace -q "$$f" >/dev/null || exit 1; done

# Regenerates the golden traces; the lessons' figures go to a temporary
# folder (--images), so only make figures touches images/.
golden: all
	@mkdir -p tests/golden
	@figs=$$(mktemp -d) && for f in lessons/*.lua; do n=$$(basename "$$f" .lua); \
	    TT_TRACE_NO_TIMES=1 ./tensortrace --images "$$figs" "$$f" > tests/golden/$$n.trace || { rm -rf "$$figs"; exit 1; }; \
	    done; rm -rf "$$figs"
	@for f in tests/golden/*.lua; do TT_TRACE_NO_TIMES=1 ./tensortrace "$$f" > "$${f%.lua}.trace" 2>&1 || exit 1; done
	@for f in tests/golden/*.lua; do [ -f "$${f%.lua}.jsonl" ] || continue; \
	    ./tensortrace -q --trace-json "$${f%.lua}.jsonl" "$$f" >/dev/null || exit 1; \
	    sed -i 's/,"ns":[0-9]*}$$/}/' "$${f%.lua}.jsonl"; done
	@echo "golden traces written to tests/golden/"

# Every lesson as one self-contained HTML page (tensortrace --report) in
# $(BUILD)/report, and index.html linking them in the README's order with
# the README's one-line descriptions. (Figures are redrawn into images/ on
# the way, as make figures does: the same bytes.)
REPORT_DIR = $(BUILD)/report
report: all
	@mkdir -p $(REPORT_DIR)
	@for f in lessons/*.lua; do n=$$(basename "$$f" .lua); echo "$(REPORT_DIR)/$$n.html"; \
	    ./tensortrace --report $(REPORT_DIR)/$$n.html "$$f" >/dev/null || exit 1; done
	@./tensortrace -q lua/report_index.lua README.md $(REPORT_DIR)

# The reports in headless Chromium (tests/browser/run.sh; never run by make
# test). Installs Debian's chromium when it is missing, saying what it runs.
test-browser: report $(BUILD)/tests/pngcolors
	@if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
	    sudo=""; [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"; \
	    if command -v apt-get >/dev/null 2>&1; then \
	        echo "test-browser: chromium is missing; running: $$sudo apt-get update && $$sudo apt-get install -y chromium"; \
	        $$sudo apt-get update -qq && $$sudo apt-get install -y chromium || exit 1; \
	    else echo "test-browser: install Chromium (e.g. 'apt-get install chromium')"; echo "0 passed, 1 failed"; exit 1; fi; \
	fi
	@sh tests/browser/run.sh $(BUILD)

$(BUILD)/tests/pngcolors: tests/browser/pngcolors.c
	@mkdir -p $(dir $@)
	$(CC) $(FIG_CFLAGS) -o $@ $< $(CORE_LDLIBS)

# make install [PREFIX=/usr/local] [DESTDIR=...]: the binary, tt.so where a
# stock lua5.4 looks for C modules, the lessons with their figures, the man
# page. Under /usr the module goes to the distribution's INSTALL_CMOD
# (pkg-config); elsewhere to PREFIX/lib/lua/5.4, which lua5.4 also searches.
LUA_CMOD ?= $(if $(filter /usr,$(PREFIX)),$(shell pkg-config --variable=INSTALL_CMOD $(LUA_PC) 2>/dev/null),$(PREFIX)/lib/lua/5.4)
SHARE     = $(PREFIX)/share/tensortrace
MAN1      = $(PREFIX)/share/man/man1
install: all tt.so
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LUA_CMOD) $(DESTDIR)$(MAN1) \
	    $(DESTDIR)$(SHARE)/lessons $(DESTDIR)$(SHARE)/images \
	    $(DESTDIR)$(SHARE)/lessons/lib $(DESTDIR)$(SHARE)/lessons/data
	install -m 755 tensortrace $(DESTDIR)$(PREFIX)/bin/tensortrace
	install -m 755 tt.so $(DESTDIR)$(LUA_CMOD)/tt.so
	install -m 644 lessons/*.lua $(DESTDIR)$(SHARE)/lessons/
	install -m 644 lessons/lib/*.lua $(DESTDIR)$(SHARE)/lessons/lib/
	install -m 644 lessons/data/* $(DESTDIR)$(SHARE)/lessons/data/
	install -m 644 images/*.png $(DESTDIR)$(SHARE)/images/
	install -m 644 lua/tensortrace.1 $(DESTDIR)$(MAN1)/tensortrace.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/tensortrace $(DESTDIR)$(LUA_CMOD)/tt.so $(DESTDIR)$(MAN1)/tensortrace.1
	rm -rf $(DESTDIR)$(SHARE)

clean:
	rm -rf $(BUILD) tensortrace tt.so

# Compares two PNGs by decoded pixels (deflate bytes may differ across zlib builds).
$(BUILD)/tests/pngcmp: tests/pngcmp.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(FIG_CFLAGS) -o $@ $< $(CORE_OBJ) $(CORE_LDLIBS)

# Benchmarks (tests/bench; never run by `make test`): our kernels next to
# OpenBLAS (dlopen'ed by the bench alone, never linked into the product),
# memcpy and PyTorch (tests/bench/bench_torch.py); its "ops" section goes
# through tt.h, so it links the core (no Lua).
$(BUILD)/bench/bench: tests/bench/bench.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CORE_CFLAGS) -o $@ tests/bench/bench.c $(CORE_OBJ) $(CORE_LDLIBS) -ldl

bench: all $(BUILD)/bench/bench
	$(BUILD)/bench/bench $(BENCH_ARGS)
	./tensortrace -q tests/bench/overhead.lua $(BENCH_ARGS)
	./tensortrace -q tests/bench/train.lua $(BENCH_ARGS)

# ===== Safety (issue 7): make asan · make scalar · make memcheck · make fuzz =====
# Each variant builds into its own folder under build/ (objects, test
# programs, binary) and runs the whole suite from a shadow root there whose
# ./tensortrace is the variant: the normal build is never touched.
.PHONY: asan scalar memcheck fuzz fuzz-batch fuzz-libfuzzer variant-test variant-bin
# (-Wno-error: -O1 brings other warnings; the normal build enforces -Werror)
SANITIZE  = -O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all \
            -fno-omit-frame-pointer -Wno-error
SAN_ENV   = ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1:allocator_may_return_null=1 \
            UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
N            ?= 20000
SEED         ?= 1
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
VALGRIND      = valgrind -q --leak-check=full --error-exitcode=1 --errors-for-leak-kinds=definite,indirect

$(BUILD)/tensortrace: $(CORE_OBJ) $(LUA_OBJ)
	$(CC) $(BASE_CFLAGS) -o $@ $^ $(LDLIBS) $(MAIN_LIBS)

variant-bin: $(BUILD)/tensortrace $(CTEST_BIN) $(BUILD)/tests/pngcmp

# The suite of $(BUILD)/tensortrace, run from $(BUILD)/root (links to the tree).
variant-test: variant-bin
	@rm -rf $(BUILD)/root && mkdir -p $(BUILD)/root
	@for d in core lua lessons tests images Makefile README.md tt.so; do ln -s $(CURDIR)/$$d $(BUILD)/root/$$d; done
	@ln -s $(CURDIR)/$(BUILD)/tensortrace $(BUILD)/root/tensortrace
	@ln -s $(CURDIR)/$(BUILD) $(BUILD)/root/build
	@[ -e $(BUILD)/pic ] || ln -s $(CURDIR)/$(PIC_BUILD) $(BUILD)/pic
	@cd $(BUILD)/root && sh tests/run.sh build

# ASan + UBSan, halting on the first report: every test and every lesson.
asan: tt.so
	@$(SAN_ENV) $(MAKE) --no-print-directory BUILD=build/asan CFLAGS="$(SANITIZE)" variant-test

# The portable scalar kernels (-DTT_NO_SIMD) against the same tests.
scalar: tt.so
	@$(MAKE) --no-print-directory BUILD=build/scalar SIMD=0 variant-test

# valgrind on every lesson (run as tests/test_golden.sh does) and every Lua test.
memcheck: all
	@command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed"; exit 1; }
	@tmp=$$(mktemp -d) && mkdir -p $$tmp/images && ln -s $(CURDIR)/lessons $$tmp/lessons && \
	fail=0; n=0; \
	for f in lessons/*.lua; do [ -f "$$f" ] || continue; n=$$((n + 1)); \
	    if (cd $$tmp && $(VALGRIND) $(CURDIR)/tensortrace "$$f" >/dev/null 2>$$tmp/err); then echo "ok   $$f"; \
	    else echo "FAIL $$f"; sed 's/^/    /' $$tmp/err | head -40; fail=$$((fail + 1)); fi; done; \
	for f in tests/lua/test_*.lua; do n=$$((n + 1)); \
	    if $(VALGRIND) ./tensortrace -q "$$f" >$$tmp/out 2>&1; then echo "ok   $$f"; \
	    else echo "FAIL $$f"; sed 's/^/    /' $$tmp/out | tail -40; fail=$$((fail + 1)); fi; done; \
	rm -rf $$tmp; echo "$$((n - fail)) passed, $$fail failed"; [ $$fail -eq 0 ]

# Random programs over the whole tt API under the sanitizers (trace on, so
# its formatting is fuzzed too): a fixed-seed batch of FUZZ_N programs (CI),
# or a longer run with make fuzz N=100000 SEED=7. After a crash, the
# culprit is the current.lua named at the start.
FUZZ_N   ?= 3000
FUZZ_OPTS = --max-memory 256M --trace=values --trace-json /dev/null tests/fuzz/run.lua --seed $(SEED)
fuzz-batch:
	@$(MAKE) --no-print-directory BUILD=build/asan CFLAGS="$(SANITIZE)" build/asan/tensortrace
	@$(SAN_ENV) build/asan/tensortrace --timeout 900 $(FUZZ_OPTS) --n $(FUZZ_N) >/dev/null

# N random programs, then each libFuzzer harness for FUZZ_SECONDS (clang).
fuzz:
	@$(MAKE) --no-print-directory BUILD=build/asan CFLAGS="$(SANITIZE)" build/asan/tensortrace
	@$(SAN_ENV) build/asan/tensortrace --timeout $$(( $(N) / 10 + 900 )) $(FUZZ_OPTS) --n $(N) >/dev/null
	@$(MAKE) --no-print-directory fuzz-libfuzzer

FUZZ_HARNESSES = $(patsubst tests/fuzz/%.c,build/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_CFLAGS = -std=c11 $(DEFS) -O1 -g -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=all $(LUA_CFLAGS) $(PNG_CFLAGS) -Icore -Icore/figure -Ilua -pthread
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(CORE_SRC) $(filter-out lua/main.c,$(LUA_SRC)) $(wildcard core/*.h core/*/*.h lua/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(CORE_SRC) $(filter-out lua/main.c,$(LUA_SRC)) $(LDLIBS)

fuzz-libfuzzer:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) not found; libFuzzer harnesses skipped"; exit 0; }; \
	$(MAKE) --no-print-directory $(FUZZ_HARNESSES) || exit 1; \
	for h in $(FUZZ_HARNESSES); do n=$$(basename $$h); mkdir -p build/fuzz/corpus-$$n; \
	    echo "== $$n for $(FUZZ_SECONDS) s"; \
	    $$h -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 -close_fd_mask=3 \
	        -artifact_prefix=build/fuzz/$$n- build/fuzz/corpus-$$n tests/fuzz/corpus/$$n 2>build/fuzz/$$n.log \
	        || { tail -60 build/fuzz/$$n.log; exit 1; }; \
	    grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" build/fuzz/$$n.log | tail -1; done

# Header dependencies written by -MMD (absent before the first build).
-include $(CORE_OBJ:.o=.d) $(LUA_OBJ:.o=.d) $(MODULE_OBJ:.o=.d) $(CTEST_BIN:=.d) $(BUILD)/tests/pngcmp.d
