# Legacy name of the environment script (older CANN layouts kept it as <root>/bin/setenv.bash).
# Source it; it sources <root>/set_env.sh, which does the work.
# shellcheck shell=bash
if [ -n "${BASH_SOURCE:-}" ]; then
    . "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/set_env.sh"
else
    echo "setenv.bash: source it from bash, or source <root>/set_env.sh" >&2
fi
