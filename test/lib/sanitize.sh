# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# The sanitizer builds, shared by test/sanitize and test/fuzz: the whole tree compiled by clang
# with AddressSanitizer and UndefinedBehaviorSanitizer (every report fatal), plus the libFuzzer
# targets, in $DEVMEM_BUILD/sanitize; and with ThreadSanitizer in $DEVMEM_BUILD/tsan. Built
# on first use, brought up to date after. The MPI test programs are not rebuilt there: the
# main build's run with the ASan runtime preloaded, or are linked again with TSan's.
#
#   devmem_sanitize_build   build it (skips the test, exit 77, without clang); sets
#                           DEVMEM_SAN_BUILD, DEVMEM_SAN_PREFIX and DEVMEM_SAN_RUNTIME (the
#                           ASan runtime to preload into programs that were not built with it)

# _devmem_san_tree DIR WHAT CFLAGS [CONFIGURE-ARGS...]: configure (once) and build the tree in
# DIR with clang and CFLAGS, against the same Open MPI as the main build (its missing headers'
# source, its PMIx); installs into DIR/install. Skips where Open MPI's headers do not compile
# with clang, fails the test on any other error.
_devmem_san_tree() {
    local dir=$1 what=$2 cflags=$3 log
    shift 3
    mkdir -p "$dir"
    log=$dir/build.log
    if [ ! -f "$dir/Makefile" ]; then
        local main_args=() ompi_args=() a
        if [ -x "$DEVMEM_BUILD/config.status" ]; then
            eval "main_args=($("$DEVMEM_BUILD/config.status" --config))"
        fi
        for a in "${main_args[@]}"; do
            case "$a" in --with-ompi=* | --with-ompi-src=* | --with-pmix=*) ompi_args+=("$a") ;; esac
        done
        echo "$what: configuring $dir (clang, $cflags) ${ompi_args[*]}"
        (cd "$dir" && CC=clang CFLAGS="$cflags" \
            "$DEVMEM_SRC/configure" --prefix="$dir/install" "$@" "${ompi_args[@]}") \
            >"$log" 2>&1 || {
            local why
            # Open MPI's headers are its compiler's (e.g. gcc's _Float16 short floats)
            if why=$(grep -m1 'opal_config.h does not compile with' "$log"); then
                devmem_skip "$what: ${why#configure: error: }"
            fi
            tail -n 20 "$log"
            devmem_step_fail "$what: configure failed (log: $log)"
            devmem_finish
        }
    fi
    echo "$what: building in $dir${_devmem_san_component_only:+ (the component alone)}"
    if [ -n "${_devmem_san_component_only:-}" ]; then
        (cd "$dir" && make -j"$(nproc)" -C opal/mca/btl/devmem/devmem &&
            make -j"$(nproc)" -C emul install &&
            make -j"$(nproc)" -C opal/mca/btl/devmem install) >>"$log" 2>&1
    else
        (cd "$dir" && make -j"$(nproc)" && make -j"$(nproc)" -C test/unit check TESTS= &&
            make install) >>"$log" 2>&1
    fi ||
        { grep -m5 -B2 -A5 'error' "$log"; devmem_step_fail "$what: build failed (log: $log)"; devmem_finish; }
}

devmem_sanitize_build() {
    command -v clang >/dev/null 2>&1 || devmem_skip "clang not found (Debian: apt-get install clang)"
    [ -x "$DEVMEM_SRC/configure" ] || devmem_skip "no configure script in $DEVMEM_SRC (run ./autogen.sh)"
    DEVMEM_SAN_BUILD=$DEVMEM_BUILD/sanitize
    DEVMEM_SAN_PREFIX=$DEVMEM_SAN_BUILD/install
    DEVMEM_SAN_RUNTIME=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
    [ -f "$DEVMEM_SAN_RUNTIME" ] || devmem_skip "clang has no shared ASan runtime ($DEVMEM_SAN_RUNTIME)"
    # The check's second leg (DEVMEM_OMPI_FREE_DONE) builds only the component, the one part
    # that links its other Open MPI, and the emulated kernel it loads: the first leg built and
    # ran the rest sanitized.
    # -fno-sanitize=function: clang 17 and later check C calls through function pointers
    # too, and Open MPI's object system calls every class's constructor as
    # void (*)(opal_object_t *) (OBJ_CLASS), our classes' included
    _devmem_san_component_only=${DEVMEM_OMPI_FREE_DONE:+1} \
        _devmem_san_tree "$DEVMEM_SAN_BUILD" sanitize \
        "-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize=function -fno-sanitize-recover=undefined" \
        --enable-fuzz
}

# devmem_tsan_build: the component compiled by clang with ThreadSanitizer, in
# $DEVMEM_BUILD/tsan (DEVMEM_TSAN_BUILD, DEVMEM_TSAN_PREFIX). The runtime cannot be preloaded
# into a program built without it (it crashes at start), so the MPI test programs are linked
# again with it (objects as built, uninstrumented): devmem_tsan_link PROG.
devmem_tsan_build() {
    command -v clang >/dev/null 2>&1 || devmem_skip "clang not found (Debian: apt-get install clang)"
    [ -x "$DEVMEM_SRC/configure" ] || devmem_skip "no configure script in $DEVMEM_SRC (run ./autogen.sh)"
    [ -f "$(clang -print-file-name=libclang_rt.tsan-x86_64.a)" ] ||
        devmem_skip "clang has no ThreadSanitizer runtime (Debian: libclang-rt-dev)"
    DEVMEM_TSAN_BUILD=$DEVMEM_BUILD/tsan
    DEVMEM_TSAN_PREFIX=$DEVMEM_TSAN_BUILD/install
    # only the component (and the emulated kernel it loads) runs instrumented: the rest of
    # the tree is not built there
    _devmem_san_component_only=1 \
        _devmem_san_tree "$DEVMEM_TSAN_BUILD" tsan "-O1 -g -fno-omit-frame-pointer -fsanitize=thread"
}

# devmem_tsan_link PROG: $DEVMEM_TSAN_BUILD/PROG, the MPI test program PROG with the
# ThreadSanitizer runtime linked in.
devmem_tsan_link() {
    local objs=() o
    for o in "$DEVMEM_MPI_BIN/$1.o" "$DEVMEM_MPI_BIN/common.o"; do
        [ -f "$o" ] || { devmem_step_fail "tsan: $o not built"; devmem_finish; }
        objs+=("$o")
    done
    OMPI_CC=clang mpicc -fsanitize=thread -o "$DEVMEM_TSAN_BUILD/$1" "${objs[@]}" -lpthread ||
        { devmem_step_fail "tsan: cannot link $1 with clang -fsanitize=thread"; devmem_finish; }
}

# devmem_sanitizer_reports FILE: the sanitizer report lines in FILE (none: status 1).
devmem_sanitizer_reports() {
    grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer' "$1"
}
