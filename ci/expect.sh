# Sourced (from the checkout's root) by the scripts that check a command's exit status and log.
# expect CODE STATUS LOG PATTERN...: STATUS must be CODE and LOG must hold every PATTERN;
# otherwise the log is printed and the script exits 1.
expect() {
    local want=$1 got=$2 log=$3
    shift 3
    if [ "$got" != "$want" ]; then
        echo "exit $got, expected $want:" >&2
        cat "$log" >&2
        exit 1
    fi
    for pattern in "$@"; do
        grep -qF -- "$pattern" "$log" || {
            echo "missing from $log: $pattern" >&2
            cat "$log" >&2
            exit 1
        }
    done
}
