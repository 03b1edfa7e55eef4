#!/usr/bin/env bash
# make uninstall: removes what the last `make install` of BUILD_DIR wrote,
# as meson recorded it (BUILD_DIR/meson-logs/install-log.txt, destination
# paths with DESTDIR included): every file, then every directory the log
# names that is empty now (a directory something else also uses stays).
#   scripts/uninstall.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
log=$build/meson-logs/install-log.txt
[ -f "$log" ] || { echo "uninstall.sh: $log is missing: nothing was installed from $build" >&2; exit 1; }
dirs=()
removed=0
while IFS= read -r path; do
        case $path in '#'* | '') continue ;; esac
        if [ -d "$path" ] && [ ! -L "$path" ]; then
                dirs+=("$path")
        elif [ -e "$path" ] || [ -L "$path" ]; then
                rm -f -- "$path"
                echo "removed $path"
                removed=$((removed + 1))
        fi
done <"$log"
# Deepest first, so a parent is tried after its children.
while IFS= read -r d; do
        [ -n "$d" ] && rmdir -- "$d" 2>/dev/null && echo "removed directory $d"
done < <(printf '%s\n' "${dirs[@]}" | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-)
echo "uninstall.sh: $removed files removed"
