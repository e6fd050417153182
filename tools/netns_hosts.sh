# tools/netns_hosts.sh: two "hosts" on one machine, for multi-node runs over a real network
# (sourced; needs root, iproute2 and util-linux). netns_hosts_up creates two network namespaces,
# each with a veth link to a bridge, and a launch agent Open MPI runs in place of ssh, which
# enters a namespace with its own hostname (node1, node2). It sets:
#   NETNS_NET     the subnet's first three octets (the hosts are $NETNS_NET.1 and .2)
#   NETNS_MPI     mpirun's arguments for the agent and TCP over the test subnet (an array);
#                 add --host "$NETNS_NET.1:K,$NETNS_NET.2:K" and the btl list
#   NETNS_TMP     a scratch directory (removed by netns_hosts_down)
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
  NETNS_MPI=(--mca plm_rsh_agent "$NETNS_TMP/agent.sh" --mca pml ob1 --mca btl_tcp_if_include "$NETNS_NET.0/24"
             --mca oob_tcp_if_include "$NETNS_NET.0/24" --bind-to none)
}

netns_hosts_tx_bytes() {
  local s=0 i
  for i in 1 2; do s=$((s + $(cat "/sys/class/net/hpv$i-$NETNS_ID/statistics/tx_bytes"))); done
  echo $s
}

netns_hosts_down() {
  local i
  for i in 1 2; do
    ip netns del "hpn$i-$NETNS_ID" 2>/dev/null
    ip link del "hpv$i-$NETNS_ID" 2>/dev/null
  done
  ip link del "hpbr$NETNS_ID" 2>/dev/null
  rm -rf "$NETNS_TMP"
}
