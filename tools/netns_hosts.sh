# tools/netns_hosts.sh: two "hosts" on one machine, for multi-node runs over a real network
# (sourced; needs root, iproute2 and util-linux). netns_hosts_up creates two network namespaces,
# each with a veth link to a bridge, and a launch agent Open MPI runs in place of ssh, which
# enters a namespace with its own hostname (node1, node2). It sets:
#   NETNS_NET     the subnet's first three octets (the hosts are $NETNS_NET.1 and .2)
#   NETNS_MPI     mpirun's arguments for the agent and TCP over the test subnet (an array);
#                 add --host "$NETNS_NET.1:K,$NETNS_NET.2:K" and the btl list
#   NETNS_TMP     a scratch directory (removed by netns_hosts_down)
# netns_hosts_env SLOTS: the same through the environment, for a plain `mpirun` (a job script's):
#   exports OMPI_MCA_* for the agent, TCP over the test subnet and a host file with SLOTS per host.
# netns_hosts_exec HOST CMD...: runs CMD in host 1's or 2's namespace.
# netns_hosts_kill HOST: SIGKILL to every process in that host's namespace (a node failure).
# netns_hosts_link HOST up|down: takes that host's link to the bridge up or down.
# netns_hosts_tx_bytes: bytes sent on the two links so far. netns_hosts_down removes it all.
netns_hosts_up() {
  NETNS_ID=$(($$ % 10000))
  NETNS_NET=10.$((64 + NETNS_ID % 64)).$((NETNS_ID % 250))
  NETNS_TMP=$(mktemp -d)
  local br=hpbr$NETNS_ID i ns
  ip link add "$br" type bridge && ip addr add "$NETNS_NET.254/24" dev "$br" && ip link set "$br" up || {
    echo "netns_hosts: cannot create a bridge" >&2
    return 1
  }
  for i in 1 2; do
    ns=hpn$i-$NETNS_ID
    ip netns add "$ns"
    ip link add "hpv$i-$NETNS_ID" type veth peer name "hpp$i-$NETNS_ID"
    ip link set "hpp$i-$NETNS_ID" netns "$ns"
    ip link set "hpv$i-$NETNS_ID" master "$br" up
    ip netns exec "$ns" ip addr add "$NETNS_NET.$i/24" dev "hpp$i-$NETNS_ID"
    ip netns exec "$ns" ip link set "hpp$i-$NETNS_ID" up
    ip netns exec "$ns" ip link set lo up
  done
  # The launch agent: Open MPI runs "<agent> <host> <command>" as it would ssh.
  cat >"$NETNS_TMP/agent.sh" <<EOF
#!/bin/bash
host=\$1
shift
case \$host in
  $NETNS_NET.1) ns=hpn1-$NETNS_ID name=node1 ;;
  $NETNS_NET.2) ns=hpn2-$NETNS_ID name=node2 ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec \$ns unshare --uts /bin/sh -c "hostname \$name; \$*"
EOF
  chmod +x "$NETNS_TMP/agent.sh"
  # (mpi_yield_when_idle: the "hosts" share this machine's cores, which Open MPI cannot see, so it
  # would spin instead of yielding as it does when oversubscribed: 40 steps at 4 ranks took 7.5 s
  # spinning, 1.1 s yielding.)
  NETNS_MPI=(--mca plm_rsh_agent "$NETNS_TMP/agent.sh" --mca pml ob1 --mca btl_tcp_if_include "$NETNS_NET.0/24"
             --mca oob_tcp_if_include "$NETNS_NET.0/24" --mca mpi_yield_when_idle 1 --bind-to none)
}

netns_hosts_env() {
  printf '%s slots=%s\n' "$NETNS_NET.1" "$1" "$NETNS_NET.2" "$1" >"$NETNS_TMP/hostfile"
  export OMPI_MCA_orte_default_hostfile=$NETNS_TMP/hostfile OMPI_MCA_plm_rsh_agent=$NETNS_TMP/agent.sh \
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self,vader OMPI_MCA_btl_tcp_if_include=$NETNS_NET.0/24 \
    OMPI_MCA_oob_tcp_if_include=$NETNS_NET.0/24 OMPI_MCA_mpi_yield_when_idle=1
}

netns_hosts_exec() {
  local host=$1
  shift
  ip netns exec "hpn$host-$NETNS_ID" "$@"
}

netns_hosts_kill() {
  ip netns pids "hpn$1-$NETNS_ID" 2>/dev/null | xargs -r kill -9 2>/dev/null
}

netns_hosts_link() {
  ip link set "hpv$1-$NETNS_ID" "$2"
  # Back up: the hosts (and the bridge's side) forget the addresses they failed to resolve while
  # the link was down, as they would after a reboot of the lost node. Left, a failed entry
  # answers the first connection to that address with "no route to host" (error 113) for
  # seconds: Open MPI's daemon on the returning host gave up on its mpirun, and a rank's first
  # connection to the other host failed; the network_faults resubmission failed 5 runs in 5 (2026-12-06).
  [ "$2" = up ] || return 0
  local i
  for i in 1 2; do ip netns exec "hpn$i-$NETNS_ID" ip neigh flush dev "hpp$i-$NETNS_ID" 2>/dev/null; done
  ip neigh flush dev "hpbr$NETNS_ID" 2>/dev/null
  return 0
}

netns_hosts_tx_bytes() {
  local s=0 i
  for i in 1 2; do s=$((s + $(cat "/sys/class/net/hpv$i-$NETNS_ID/statistics/tx_bytes"))); done
  echo $s
}

netns_hosts_down() {
  local i
  for i in 1 2; do
    netns_hosts_kill $i
    ip netns del "hpn$i-$NETNS_ID" 2>/dev/null
    ip link del "hpv$i-$NETNS_ID" 2>/dev/null
  done
  ip link del "hpbr$NETNS_ID" 2>/dev/null
  rm -rf "$NETNS_TMP"
}
