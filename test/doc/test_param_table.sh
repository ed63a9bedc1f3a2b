#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# doc/parameters.md is what the installed component registers (contrib/param-table.sh), and
# the component keeps the parameter budget of issue 41: at most 40 in all, base BTL ones
# included (informational variables, which nobody sets, are listed apart and not counted),
# each with help text.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

page=$DEVMEM_SRC/doc/parameters.md
if "$DEVMEM_SRC/contrib/param-table.sh" --check "$page" "$DEVMEM_PREFIX" >"$DEVMEM_TEST_TMP/check" 2>&1; then
    devmem_step_ok "$(tail -n 1 "$DEVMEM_TEST_TMP/check")"
else
    cat "$DEVMEM_TEST_TMP/check"
    devmem_step_fail "doc/parameters.md is not the table of the registered parameters"
fi

"$DEVMEM_SRC/contrib/param-table.sh" "$DEVMEM_PREFIX" >"$DEVMEM_TEST_TMP/page" 2>&1
total=$(sed -n 's/^\([0-9]*\) parameters: .*/\1/p' "$DEVMEM_TEST_TMP/page")
if [ -n "$total" ] && [ "$total" -le 40 ]; then
    devmem_step_ok "$total parameters registered in all (at most 40)"
else
    devmem_step_fail "${total:-an unknown number of} parameters registered in all, more than 40"
fi
# every row of the component's own parameters has help text
if awk -F' [|] ' '/^[|] `btl_devmem_/ && length($NF) < 20 { bad = bad " " $1 } END { if (bad) { print bad; exit 1 } }' \
    "$DEVMEM_TEST_TMP/page"; then
    devmem_step_ok "every parameter of the component has help text"
else
    devmem_step_fail "parameters without help text"
fi
devmem_finish
