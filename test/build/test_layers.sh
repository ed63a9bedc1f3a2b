#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The component's layers (doc/design.md, "Layers"), bottom first, one folder each: a file may
# call functions of, and include headers from, its own layer and the layers below. A call to a layer above is a failure unless it is one
# of the known ones listed here (none: what a lower layer tells a higher one goes through
# callbacks the higher one registered); a listed one that is gone fails too, so that the list
# only shrinks.
#
# Data too, from every struct and union defined in the component's files (a struct's layer is
# its file's; those of devmem/*.h, the kernel layer, are layer 0):
#   S1 a struct has no member whose type (by value, by pointer, or through a typedef) is a
#      struct of a layer above;
#   S2 a file names (->f, .f, offsetof(T, f)) only fields that some struct of its layer or
#      below declares. No types are inferred: f is resolved by name to every struct of ours
#      declaring it, and passes if any of them is low enough; a name none of ours declares
#      (Open MPI's, the system's) is not ours to check. One exception to "no types": an access
#      made on one of our extern globals (mca_btl_devmem_component.f) is that struct's field;
#   S3 every member of a struct of layer L is used by a file of layer L or below (a field only
#      layers above use belongs to them). Giving a field its zero or first value (= 0, NULL or
#      false, memset, OBJ_CONSTRUCT, OBJ_DESTRUCT) or taking its size is not a use: the struct's
#      owner makes and unmakes every field. Layer 0's members are not checked.
# What fails and is known is listed in known_data below, with why; a listed one that no longer
# fails fails too. Members the parser cannot read fail ("cannot read"); members a macro makes
# are listed ("macro"). Not read: a named struct defined inside another (its members count as
# the outer one's), the parameter and return types of function-pointer members (S1 looks at
# data members only), several function pointers in one declaration, and types hidden in macros.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"

dir=$DEVMEM_SRC/opal/mca/btl/devmem
# A file's layer is its folder's place in this list, bottom first: devmem/ (the kernel layer)
# is 0, the component's own folder, where the BTL's entry points are, the top. A folder not on
# the list fails.
folders='devmem base sockets device connections rdma devflow'
top=$(echo $folders | wc -w)
# the component's files, as FOLDER/btl_devmem_NAME.c, .h (the top's without a folder)
files() { # EXT...
    local e
    for e in "$@"; do
        (cd "$dir" && ls -- btl_devmem*."$e" */btl_devmem*."$e" 2>/dev/null)
    done
}
# a file's key in what this test prints: FOLDER/NAME (.c) or FOLDER/NAME.h
key_of() { sed 's/btl_devmem_//; s/btl_devmem\.h$/btl_devmem.h/; s/\.c$//'; }
# awk: layer_of(KEY) from the folder part of a key or a path; -1 for a folder not on the list
read_layers='
function layer_of(k,    n, w, i) {
    if (k !~ /\//) return top
    sub(/\/[^\/]*$/, "", k); sub(/.*\//, "", k)
    n = split(folders, w, " ")
    for (i = 1; i <= n; i++) if (w[i] == k) return i - 1
    return -1
}'
# caller>callee pairs of files that still call up (none now; a pair added here must say why)
known='
'

# KEY FUNCTION for every function a file defines (headers: static inline ones)
defs() {
    local f
    for f in $(files c h); do
        awk -v f="$(echo "$f" | key_of)" -v hdr="${f##*.}" '
            /^[A-Za-z_]/ && !/;[ \t]*$/ && match($0, /mca_btl_devmem_[a-z0-9_]+\(/) {
                if (hdr == "h" && $0 !~ /static inline/) next
                print f, substr($0, RSTART, RLENGTH - 1) }' "$dir/$f"
    done
}
# CALLER CALLEE_FUNCTION for every call in a .c file
calls() {
    local f
    for f in $(files c); do
        grep -o 'mca_btl_devmem_[a-z0-9_]*(' "$dir/$f" | sed 's/($//' | sed "s|^|$(echo "$f" | key_of) |"
    done
}
up=$(awk -v folders="$folders" -v top="$top" "$read_layers"'
    FNR == NR { owner[$2] = $1; next }
    ($2 in owner) && owner[$2] != $1 {
        c = $1; d = owner[$2]
        if (layer_of(c) < 0 || layer_of(d) < 0) { print "unplaced " c ">" d; next }
        if (layer_of(d) > layer_of(c)) print c ">" d
    }' <(defs) <(calls) | sort -u)

unplaced=$(echo "$up" | sed -n 's/^unplaced //p')
if [ -n "$unplaced" ]; then
    devmem_step_fail "files in a folder that is no layer (add it to this test and doc/design.md): $unplaced"
fi
new=$(comm -23 <(echo "$up" | grep -v '^unplaced' | grep .) <(echo "$known" | grep . | sort))
gone=$(comm -13 <(echo "$up" | grep -v '^unplaced' | grep .) <(echo "$known" | grep . | sort))
if [ -n "$new" ]; then
    devmem_step_fail "calls to a layer above, new: $(echo $new) (register a callback instead)"
else
    devmem_step_ok "no new call to a layer above"
fi
if [ -n "$gone" ]; then
    devmem_step_fail "calls up that are gone: $(echo $gone) (take them off this test's list)"
else
    devmem_step_ok "$(echo "$known" | grep -c .) known calls up (doc/design.md, Layers)"
fi

# ---- includes: a file includes the headers of its own layer and below (by the folder in the
# #include line: FOLDER/btl_devmem_NAME.h), but for these, each with its reason
known_includes='
'
includes_up=$(for f in $(files c h); do
    grep -o '^#include "[a-z_/]*btl_devmem[a-z_]*\.h"' "$dir/$f" | sed 's/^#include "//; s/"$//' |
        sed "s|^|$f |"
done | awk -v folders="$folders" -v top="$top" "$read_layers"'
    layer_of($2) > layer_of($1) || layer_of($2) < 0 { print $1 ">" $2 }' | sort -u)
new=$(comm -23 <(echo "$includes_up" | grep .) <(echo "$known_includes" | awk 'NF { print $1 }' | sort))
gone=$(comm -13 <(echo "$includes_up" | grep .) <(echo "$known_includes" | awk 'NF { print $1 }' | sort))
if [ -n "$new" ]; then
    devmem_step_fail "includes of a layer above, new: $(echo $new)"
elif [ -n "$gone" ]; then
    devmem_step_fail "known includes up that are gone: $(echo $gone) (take them off this test's list)"
else
    devmem_step_ok "no new include of a layer above ($(echo "$known_includes" | grep -c .) known)"
fi

# ---- data: struct members (S1, S2, S3 above)

# RULE PATTERN why: what fails today and may stay, shrink-only. PATTERN is a violation's key as
# the failures print it (S1, S3: STRUCT.FIELD; S2: FILE->FIELD; macro: STRUCT), with * for a
# whole struct (STRUCT.*) or one field name in every struct (*.FIELD).
known_data='
S3 mca_btl_devmem_component_t.* the component: the MCA parameters and global state of every layer, each read by its own layer
S3 mca_btl_devmem_modex_hdr.* the modex record, a wire format (layer 1) that the component publishes and the connections read
S3 mca_btl_devmem_modex_addr.* the modex record, a wire format (layer 1) that the component publishes and the connections read
S3 *.reserved padding of a record that leaves the process (modex, hello, registration handle), never read by name
S3 mca_btl_devmem_stripe.* how the lanes cut a get (rdma.h: the interface get and put offer the device flows); rdma.c keeps it for its get and hands it back, the lanes alone fill and read it
S1 mca_btl_devmem_frag_t.endpoint the endpoint a fragment goes to, as the BTL descriptor of Open MPI names it; the layers above set it and read it, the fragment never looks inside
S3 mca_btl_devmem_frag_t.endpoint see S1
S3 mca_btl_devmem_frag_t.done the completion of the owner of a fragment (frag.h): set and run by the layers above by design
S2 connections/endpoint->cbdata the data of an active-message registration of Open MPI (mca_btl_active_message_callback_t), not the cbdata of a get
S2 sockets/pollset->data the data union of the system struct epoll_event, not the field of a push
macro mca_btl_devmem_stats members made by MCA_BTL_DEVMEM_STATS: the counters every layer adds to (base/btl_devmem_counters.h)
'

# The program reads every component file and devmem/*.h. It prints
#   V RULE KEY DETAIL      a violation (RULE: S1 S2 S3 macro)
#   UNPLACED FILE          a component file in a folder that is no layer
#   BAD STRUCT TEXT        a member declaration it cannot read
#   DUP STRUCT FILE FILE   a struct defined twice
#   N STRUCTS MEMBERS      what it read
data_awk=$(cat <<'AWK'
# One line without its comments (incom: inside /* */ from an earlier line) and without what
# string and character literals hold.
function strip(s,    out, p, q, c, i, j, k) {
    out = ""
    while (s != "") {
        if (incom) {
            i = index(s, "*/")
            if (!i) return out
            s = substr(s, i + 2); incom = 0; out = out " "; continue
        }
        p = 0
        for (k = 1; k <= 4; k++) {
            i = index(s, lit[k])
            if (i && (!p || i < p)) { p = i; c = lit[k] }
        }
        if (!p) return out s
        out = out substr(s, 1, p - 1)
        if (c == "/*") { incom = 1; s = substr(s, p + 2); continue }
        if (c == "//") return out
        for (j = p + 1; j <= length(s); j++) {
            q = substr(s, j, 1)
            if (q == "\\") { j++; continue }
            if (q == c) break
        }
        out = out c c; s = substr(s, j + 1)
    }
    return out
}
function trim(s) { sub(/^[ ]+/, "", s); sub(/[ ]+$/, "", s); return s }
function addmember(sname, name, type) {
    nmem++; mstruct[nmem] = sname; mname[nmem] = name; mtype[nmem] = type
}
# One declaration of a member list, nested bodies taken out: a function pointer, or one type
# and names (pointers, arrays, bit fields; several to a line). Its type: tag:T for struct or
# union T, name:T for a typedef name, "" for none of ours (enums, functions).
function member(sname, d,    name, type, parts, n, k, t, w, nw, j) {
    d = trim(d)
    if (d == "") return
    if (match(d, /\([ ]*\*[ ]*[A-Za-z_][A-Za-z_0-9]*[ ]*\)/)) {
        name = substr(d, RSTART, RLENGTH); gsub(/[^A-Za-z_0-9]/, "", name)
        addmember(sname, name, "")
        return
    }
    if (d ~ /\(/) {
        if (d ~ /^[A-Z_][A-Z_0-9]*[ ]*\(.*\)$/) print "V macro", sname, "(members made by " d ")"
        else print "BAD", sname, d
        return
    }
    gsub(/\[[^]]*\]/, "", d)
    gsub(/:[ ]*[A-Za-z_0-9 ]+/, "", d)
    n = split(d, parts, ",")
    for (k = 1; k <= n; k++) {
        t = parts[k]; gsub(/\*/, " ", t); t = trim(t)
        nw = split(t, w, / +/)
        if (nw < 1 || w[nw] !~ /^[A-Za-z_][A-Za-z_0-9]*$/ || (k == 1 && nw < 2)) {
            print "BAD", sname, d; return
        }
        name = w[nw]
        if (k == 1) {
            type = ""
            if (t ~ /(^| )enum /) type = ""
            else if (match(t, /(struct|union) +[A-Za-z_][A-Za-z_0-9]*/)) {
                type = substr(t, RSTART, RLENGTH); sub(/^(struct|union) +/, "", type)
                type = "tag:" type
            } else {
                for (j = nw - 1; j > 1 && w[j] ~ /^(const|volatile|restrict|_Atomic|signed|unsigned)$/; j--) ;
                type = "name:" w[j]
            }
        }
        addmember(sname, name, type)
    }
}
# A member list. A nested struct or union body counts as the outer struct's members (what
# follows its closing brace names members of no type of ours); an enum body is dropped.
function body(sname, b,    i, c, depth, d, start, inner, kind) {
    d = ""; i = 1
    while (i <= length(b)) {
        c = substr(b, i, 1)
        if (c == ";") { member(sname, d); d = ""; i++; continue }
        if (c == "{") {
            kind = d; depth = 1; start = i + 1
            for (i++; i <= length(b) && depth; i++) {
                c = substr(b, i, 1)
                if (c == "{") depth++
                else if (c == "}") depth--
            }
            inner = substr(b, start, i - start - 1)
            if (kind ~ /(struct|union) *[A-Za-z_0-9]* *$/) body(sname, inner)
            d = "int "
            continue
        }
        d = d c; i++
    }
    if (trim(d) != "") member(sname, d)
}
# At the end of a file: its struct and union definitions (`struct T {`, `typedef struct T {`
# ... `} T_t;`, `static struct {` ... `} var;`, anywhere, functions too), then its
# `typedef struct T NAME;`, `typedef NAME1 NAME2;` and `extern [struct] T NAME;`.
function endfile(    s, pre, i, c, depth, b, tag, trailer, sname, td, m, x) {
    if (fkey == "") return
    s = " " joined
    while (match(s, /[^A-Za-z_0-9](struct|union)( +[A-Za-z_][A-Za-z_0-9]*)? *\{/)) {
        pre = substr(s, 1, RSTART)
        tag = substr(s, RSTART + 1, RLENGTH - 2); sub(/^(struct|union) */, "", tag); tag = trim(tag)
        td = pre; sub(/.*[;{}]/, "", td); td = (td ~ /(^|[^A-Za-z_0-9])typedef *$/)
        s = substr(s, RSTART + RLENGTH)
        depth = 1
        for (i = 1; i <= length(s) && depth; i++) {
            c = substr(s, i, 1)
            if (c == "{") depth++
            else if (c == "}") depth--
        }
        b = substr(s, 1, i - 2); s = substr(s, i)
        trailer = s; sub(/[;={].*/, "", trailer); gsub(/[*]|\[[^]]*\]/, " ", trailer)
        trailer = trim(trailer); sub(/[ ,].*/, "", trailer)
        # an anonymous one is named by its typedef, or FILE:VARIABLE
        sname = tag != "" ? tag : (td ? trailer : fkey ":" trailer)
        if (td && trailer != "" && tag != "") typedef[trailer] = "tag:" tag
        if (sname in slayer) {
            print "DUP", sname, sfile[sname], fkey
            if (layer < slayer[sname]) slayer[sname] = layer
        } else { slayer[sname] = layer; sfile[sname] = fkey }
        body(sname, b)
    }
    s = " " joined
    while (match(s, /[^A-Za-z_0-9](typedef|extern) +((struct|union) +)?[A-Za-z_][A-Za-z_0-9]* +[A-Za-z_][A-Za-z_0-9]* *;/)) {
        m = substr(s, RSTART + 1, RLENGTH - 1); s = substr(s, RSTART + RLENGTH)
        sub(/ *;$/, "", m); x = m; sub(/.* /, "", x); sub(/ +[A-Za-z_0-9]*$/, "", m)
        c = m; sub(/ .*/, "", c); sub(/^[a-z]+ +/, "", m)
        if (m ~ /^(struct|union) /) { sub(/^[a-z]+ +/, "", m); m = "tag:" m } else m = "name:" m
        if (c == "typedef") typedef[x] = m
        else gvar[x] = m
    }
}
# The struct of ours a member type names, through typedefs ("" if none): a typedef name that
# is also a struct tag of ours (Open MPI typedefs mca_btl_base_endpoint_t so) is that struct.
function resolve(t,    n) {
    for (n = 0; n < 10 && t ~ /^name:/; n++) {
        if (substr(t, 6) in typedef) t = typedef[substr(t, 6)]
        else if (substr(t, 6) in slayer) t = "tag:" substr(t, 6)
        else return ""
    }
    return t ~ /^tag:/ && (substr(t, 5) in slayer) ? substr(t, 5) : ""
}
# An access that only gives a field its zero or first value, or takes its size: stored 0,
# NULL or false (x->a = x->b = 0 too), or the whole first argument of memset, OBJ_CONSTRUCT,
# OBJ_DESTRUCT or sizeof.
function initonly(pre, post) {
    if (post ~ /^[ ]*=[ ]*([A-Za-z_0-9>.-]+[ ]*=[ ]*)*(0|0u|NULL|false)[ ]*;/) return 1
    return post ~ /^[ ]*[,)]/ && pre ~ /(memset|OBJ_CONSTRUCT|OBJ_DESTRUCT|sizeof)[ ]*\([ ]*&?[ ]*[A-Za-z_0-9>.-]*$/
}
# This file names field f (init: only to initialise it; base: the variable of a "." access)
function adduse(f, init, base) {
    if ((fkey, f, init, base) in use) return
    use[fkey, f, init, base] = 1; nuse++
    ufile[nuse] = fkey; ufield[nuse] = f; ulayer[nuse] = layer; uinit[nuse] = init; ubase[nuse] = base
}
# FILE's layer (-1: a folder not on the list); fkey: its key (FOLDER/NAME, FOLDER/NAME.h,
# devmem/FILE)
function placefile(f,    k) {
    if (f ~ /\/devmem\/devmem\/[^\/]*$/) { k = f; sub(/.*\//, "devmem/", k); fkey = k; return 0 }
    k = substr(f, length(dir) + 2); sub(/btl_devmem_/, "", k); sub(/\.c$/, "", k); fkey = k
    return layer_of(k)
}
function addto(list, file) { return index(list " ", " " file " ") ? list : list " " file }
BEGIN {
    lit[1] = "/*"; lit[2] = "//"; lit[3] = "\""; lit[4] = sprintf("%c", 39)
    for (i = 1; i < ARGC; i++) if (placefile(ARGV[i]) < 0) print "UNPLACED", fkey
    fkey = ""
}
FNR == 1 {
    endfile(); joined = ""; incom = 0; cont = 0
    layer = placefile(FILENAME); comp = FILENAME !~ /\/devmem\/devmem\/[^\/]*$/
}
{
    line = strip($0); gsub(/\t/, " ", line)
    pp = cont || line ~ /^ *#/
    cont = pp && line ~ /\\ *$/
    if (!pp) joined = joined " " line
    if (!comp || layer < 0 || line ~ /^ *# *include/) next
    s = line; off = 0
    while (match(s, /(->|\.) *[A-Za-z_][A-Za-z_0-9]*/)) {
        f = substr(s, RSTART, RLENGTH); at = off + RSTART
        off += RSTART + RLENGTH - 1; s = substr(s, RSTART + RLENGTH)
        if (f ~ /^\./ && at > 1 && substr(line, at - 1, 1) ~ /[0-9.]/) continue
        pre = substr(line, 1, at - 1); base = ""
        if (f ~ /^\./ && match(pre, /(^|[^A-Za-z_0-9.>])[A-Za-z_][A-Za-z_0-9]* *$/)) {
            base = substr(pre, RSTART, RLENGTH); gsub(/[^A-Za-z_0-9]/, "", base)
        }
        sub(/^(->|\.) */, "", f)
        adduse(f, initonly(pre, s), base)
    }
    s = line
    while (match(s, /offsetof *\([^,]*, *[A-Za-z_][A-Za-z_0-9]*/)) {
        f = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH); sub(/.*[ ,]/, "", f)
        adduse(f, 0, "")
    }
}
END {
    endfile()
    for (i = 1; i <= nmem; i++) {
        f = mname[i]; L = slayer[mstruct[i]]; has[mstruct[i], f] = 1
        if (!(f in low) || L < low[f]) low[f] = L
        decl[f] = decl[f] " " mstruct[i] "@" L
    }
    # S2, and the lowest layer that uses each field name (or each field of a global of ours)
    for (i = 1; i <= nuse; i++) {
        f = ufield[i]; L = ulayer[i]; t = ubase[i] in gvar ? resolve(gvar[ubase[i]]) : ""
        if (t != "" && ((t, f) in has)) {
            if (!uinit[i] && (!((t, f) in tused) || L < tused[t, f])) tused[t, f] = L
            if (!uinit[i]) tl[t, f] = addto(tl[t, f], ufile[i])
            if (slayer[t] > L && !((ufile[i], f) in s2))
                print "V S2", ufile[i] "->" f, "(layer " L "; " ubase[i] " is " t ", layer " slayer[t] ")"
            if (slayer[t] > L) s2[ufile[i], f] = 1
            continue
        }
        if (!uinit[i] && (!(f in usedby) || L < usedby[f])) usedby[f] = L
        if (!uinit[i]) ul[f] = addto(ul[f], ufile[i])
        if ((f in low) && low[f] > L && !((ufile[i], f) in s2)) {
            s2[ufile[i], f] = 1
            print "V S2", ufile[i] "->" f, "(layer " L "; declared only above, by" decl[f] ")"
        }
    }
    for (sn in slayer) nstruct++
    print "N", nstruct, nmem
    # S1 and S3
    for (i = 1; i <= nmem; i++) {
        sn = mstruct[i]; L = slayer[sn]; f = mname[i]
        if (L < 1) continue
        t = resolve(mtype[i])
        if (t != "" && slayer[t] > L)
            print "V S1", sn "." f, "(layer " L ", " sfile[sn] ") holds struct " t " (layer " slayer[t] ", " sfile[t] ")"
        u = f in usedby ? usedby[f] : 99
        if (((sn, f) in tused) && tused[sn, f] < u) u = tused[sn, f]
        if (u == 99) print "V S3", sn "." f, "(layer " L ", " sfile[sn] ") used by no file"
        else if (u > L) print "V S3", sn "." f, "(layer " L ", " sfile[sn] ") used only above, by" ul[f] tl[sn, f]
    }
}
AWK
)
data=$(awk -v folders="$folders" -v top="$top" -v dir="$dir" "$read_layers$data_awk" \
    $(files h c | sed "s|^|$dir/|") "$dir"/devmem/*.h)

# the violations against the list: "new RULE KEY DETAIL", "gone RULE PATTERN", "known RULE KEY"
judged=$(awk '
    FNR == NR { if (NF >= 2) { n++; rule[n] = $1; pat[n] = $2 } next }
    $1 == "V" {
        key = $3; hit = 0
        for (i = 1; i <= n; i++) {
            if (rule[i] != $2) continue
            p = pat[i]
            if (p == key || (p ~ /\.\*$/ && index(key, substr(p, 1, length(p) - 1)) == 1) ||
                (p ~ /^\*\./ && length(key) >= length(p) - 1 &&
                 substr(key, length(key) - length(p) + 2) == substr(p, 2))) { hit = 1; seen[i] = 1 }
        }
        if (hit) print "known", $2, key
        else { $1 = "new"; print }
    }
    END { for (i = 1; i <= n; i++) if (!seen[i]) print "gone", rule[i], pat[i] }
' <(echo "$known_data") <(echo "$data"))

unplaced=$(echo "$data" | sed -n 's/^UNPLACED //p')
if [ -n "$unplaced" ]; then
    devmem_step_fail "files in a folder that is no layer (add it to this test and doc/design.md): $(echo $unplaced)"
fi
bad=$(echo "$data" | sed -n -e 's/^BAD /    /p' -e 's/^DUP /    /p')
if [ -n "$bad" ]; then
    devmem_step_fail "struct members this test cannot read, or a struct defined twice (write them plainly, or teach the test):
$bad"
else
    devmem_step_ok "$(echo "$data" | sed -n 's/^N \([0-9]*\) \([0-9]*\)$/\2 members of \1 structs/p') read"
fi
for rule in S1 S2 S3 macro; do
    case $rule in
        S1) what="a struct holds a struct of a layer above" ;;
        S2) what="a file uses a field only structs of a layer above declare" ;;
        S3) what="a field only layers above use (it is theirs: move it up)" ;;
        macro) what="struct members made by a macro, not checked" ;;
    esac
    new=$(echo "$judged" | sed -n "s/^new $rule /    /p")
    if [ -n "$new" ]; then
        devmem_step_fail "$rule, $what: $(echo "$new" | grep -c .) new
$new"
    else
        devmem_step_ok "$rule: none new ($(echo "$judged" | grep -c "^known $rule ") known)"
    fi
done
gone=$(echo "$judged" | sed -n 's/^gone /    /p')
if [ -n "$gone" ]; then
    devmem_step_fail "known data exceptions that are gone (take them off this test's list):
$gone"
else
    devmem_step_ok "$(echo "$known_data" | grep -c .) known data exceptions, all still there"
fi
devmem_finish
