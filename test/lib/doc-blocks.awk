# SPDX-License-Identifier: BSD-3-Clause
# The command blocks of a Markdown page, for the tests that run them as written.
#
#   awk -v out=DIR -v page=NAME -v first=N -f doc-blocks.awk PAGE.md
#
# Every fenced block whose info string is sh, bash, shell or console (indented with its fence
# or not) is a command block; output samples are written indented, or fenced as text. Block
# number K (counting from `first`) goes to DIR/block-K.sh, with its indentation taken off, and
# one line to DIR/index:
#
#   K <TAB> NAME:LINE <TAB> section <TAB> mark
#
# LINE is the fence's line, the section the last "#"-heading above it (outside any fence), and
# the mark the text of the nearest "<!-- doc-test: MARK -->" comment above the block (blank
# lines between them allowed), or "-" where there is none. Marks are read by
# test/doc/test_doc_commands.sh. A fence left open fails (exit 1), naming its line.

function fence_info(line) {
    sub(/^[ \t]*```[ \t]*/, "", line)
    sub(/[ \t]*$/, "", line)
    return line
}

infence && $0 ~ "^" indent "```[ \t]*$" {
    infence = 0
    if (dst != "") {
        close(dst)
    }
    dst = ""
    next
}
infence {
    if (dst != "") {
        line = $0
        if (substr(line, 1, length(indent)) == indent) {
            line = substr(line, length(indent) + 1)
        }
        print line > dst
    }
    next
}
/^[ \t]*<!-- doc-test: .* -->[ \t]*$/ {
    mark = $0
    sub(/^[ \t]*<!-- doc-test: /, "", mark)
    sub(/ -->[ \t]*$/, "", mark)
    next
}
/^#+ / {
    section = $0
    sub(/^#+ /, "", section)
    mark = ""
    next
}
/^[ \t]*```/ {
    match($0, /^[ \t]*/)
    indent = substr($0, 1, RLENGTH)
    infence = 1
    opened = NR
    dst = ""
    info = fence_info($0)
    if (info == "sh" || info == "bash" || info == "shell" || info == "console") {
        k = (k == "" ? first + 0 : k + 1)
        dst = out "/block-" k ".sh"
        printf "" > dst
        printf "%d\t%s:%d\t%s\t%s\n", k, page, NR, section, (mark == "" ? "-" : mark) >> (out "/index")
    }
    mark = ""
    next
}
/[^ \t]/ {
    mark = ""
}
END {
    if (infence) {
        printf "%s:%d: a code fence is never closed\n", page, opened > "/dev/stderr"
        exit 1
    }
}
