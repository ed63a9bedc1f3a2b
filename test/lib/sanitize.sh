# shellcheck shell=bash
# The sanitizer build, shared by test/sanitize and test/fuzz: the whole tree compiled by clang
# with AddressSanitizer and UndefinedBehaviorSanitizer (every report fatal), plus the libFuzzer
# targets, in $DEVMEM_BUILD/sanitize. Built on first use, brought up to date after. The MPI
# test programs are not rebuilt there: the main build's run with the ASan runtime preloaded.
#
#   devmem_sanitize_build   build it (skips the test, exit 77, without clang); sets
#                           DEVMEM_SAN_BUILD, DEVMEM_SAN_PREFIX and DEVMEM_SAN_RUNTIME (the
#                           ASan runtime to preload into programs that were not built with it)

devmem_sanitize_build() {
    local log
    command -v clang >/dev/null 2>&1 || devmem_skip "clang not found (Debian: apt-get install clang)"
    [ -x "$DEVMEM_SRC/configure" ] || devmem_skip "no configure script in $DEVMEM_SRC (run ./autogen.sh)"
    DEVMEM_SAN_BUILD=$DEVMEM_BUILD/sanitize
    DEVMEM_SAN_PREFIX=$DEVMEM_SAN_BUILD/install
    DEVMEM_SAN_RUNTIME=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
    [ -f "$DEVMEM_SAN_RUNTIME" ] || devmem_skip "clang has no shared ASan runtime ($DEVMEM_SAN_RUNTIME)"
    mkdir -p "$DEVMEM_SAN_BUILD"
    log=$DEVMEM_SAN_BUILD/build.log
    if [ ! -f "$DEVMEM_SAN_BUILD/Makefile" ]; then
        # the same Open MPI as the main build (and its missing headers' source, its PMIx)
        local main_args=() ompi_args=() a
        if [ -x "$DEVMEM_BUILD/config.status" ]; then
            eval "main_args=($("$DEVMEM_BUILD/config.status" --config))"
        fi
        for a in "${main_args[@]}"; do
            case "$a" in --with-ompi=* | --with-ompi-src=* | --with-pmix=*) ompi_args+=("$a") ;; esac
        done
        echo "sanitize: configuring $DEVMEM_SAN_BUILD (clang, -fsanitize=address,undefined)" \
            "${ompi_args[*]}"
        # -fno-sanitize=function: clang 17 and later check C calls through function pointers
        # too, and Open MPI's object system calls every class's constructor as
        # void (*)(opal_object_t *) (OBJ_CLASS), our classes' included
        (cd "$DEVMEM_SAN_BUILD" && CC=clang \
            CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize=function -fno-sanitize-recover=undefined" \
            "$DEVMEM_SRC/configure" --prefix="$DEVMEM_SAN_PREFIX" --enable-fuzz "${ompi_args[@]}") \
            >"$log" 2>&1 || {
            local why
            # Open MPI's headers are its compiler's (e.g. gcc's _Float16 short floats)
            if why=$(grep -m1 'opal_config.h does not compile with' "$log"); then
                devmem_skip "sanitize: ${why#configure: error: }"
            fi
            tail -n 20 "$log"
            devmem_step_fail "sanitize: configure failed (log: $log)"
            devmem_finish
        }
    fi
    echo "sanitize: building in $DEVMEM_SAN_BUILD"
    (cd "$DEVMEM_SAN_BUILD" && make -j"$(nproc)" && make -j"$(nproc)" -C test/unit check TESTS= &&
        make install) >>"$log" 2>&1 ||
        { grep -m5 -B2 -A5 'error' "$log"; devmem_step_fail "sanitize: build failed (log: $log)"; devmem_finish; }
}

# devmem_sanitizer_reports FILE: the sanitizer report lines in FILE (none: status 1).
devmem_sanitizer_reports() {
    grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer' "$1"
}
