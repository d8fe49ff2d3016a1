# SPDX-License-Identifier: MIT
# ledger.sh -- sourced by bench/run and bench/soak: ends the processes a driver wrote to its
# PID ledger (`+PID STARTTIME NAME` when started, `-PID` once reaped) that are still alive
# and still the ones it started (same start time, so a recycled PID is never signalled).

# ledger_stop_live LEDGER PREFIX
ledger_stop_live() {
    local ledger=$1 prefix=$2
    local -A started=()
    local line pid st name
    while read -r line; do
        case "$line" in
        +*) read -r pid st name <<<"${line#+}"; started[$pid]=$st ;;
        -*) unset "started[${line#-}]" ;;
        esac
    done <"$ledger"
    local live=()
    for pid in "${!started[@]}"; do
        [[ -r /proc/$pid/stat ]] || continue
        st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f20) || continue
        [[ "$st" == "${started[$pid]}" ]] || continue
        live+=("$pid")
    done
    if ((${#live[@]})); then
        echo "$prefix: stopping leftover processes: ${live[*]}" >&2
        kill -TERM "${live[@]}" 2>/dev/null || true
        sleep 1
        for pid in "${live[@]}"; do
            [[ -d /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
        done
    fi
}
