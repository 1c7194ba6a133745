# Shared by the scripts that install Debian packages: `source` it.

# apt_install PKG...: install packages without letting their maintainer
# scripts start daemons with Debian's defaults (Docker's init script would
# bring up the docker0 bridge, Slurm's would start with the stock config): a
# policy-rc.d answering 101 ("action forbidden") is in place during the
# install unless one already exists. apt's output goes to stderr.
apt_install() {
    local policy=/usr/sbin/policy-rc.d added_policy=0
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\n# added by hubgrid scripts for an apt-get install; removed afterwards\nexit 101\n' > "$policy"
        chmod 755 "$policy"
        added_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    local rc=0
    { apt-get update -q && apt-get install -y -q --no-install-recommends "$@"; } >&2 || rc=$?
    if [[ "$added_policy" == 1 ]]; then rm -f "$policy"; fi
    return "$rc"
}
