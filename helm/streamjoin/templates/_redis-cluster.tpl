{{/* Names and scripts of the in-release Redis Cluster (redisCluster.enabled, redis-cluster.yaml). */}}

{{- define "streamjoin.redisClusterName" -}}
{{- printf "%s-redis-cluster" (include "streamjoin.fullname" .) | trunc 52 | trimSuffix "-" }}
{{- end }}

{{/* The node count: primaries times (1 + replicas per primary). */}}
{{- define "streamjoin.redisClusterNodes" -}}
{{- mul (int .Values.redisCluster.primaries) (add1 (int .Values.redisCluster.replicasPerPrimary)) }}
{{- end }}

{{/* Every node's stable DNS name, space-separated (pod.headless-service.namespace.svc.domain). */}}
{{- define "streamjoin.redisClusterHosts" -}}
{{- $name := include "streamjoin.redisClusterName" . }}
{{- $hosts := list }}
{{- range $i := until (int (include "streamjoin.redisClusterNodes" .)) }}
{{- $hosts = append $hosts (printf "%s-%d.%s-headless.%s.svc.%s" $name $i $name $.Release.Namespace $.Values.redisCluster.clusterDomain) }}
{{- end }}
{{- join " " $hosts }}
{{- end }}

{{/* The product's URL of the cluster: every node, so any of them can bootstrap the client. */}}
{{- define "streamjoin.redisClusterUrl" -}}
{{- $nodes := list }}
{{- range (splitList " " (include "streamjoin.redisClusterHosts" .)) }}
{{- $nodes = append $nodes (printf "%s:6379" .) }}
{{- end }}
{{- printf "redis+cluster://%s" (join "," $nodes) }}
{{- end }}

{{/*
A node: the password goes into a config file (not the command line, which `ps` shows), then
redis-server runs as a cluster node with the AOF fsynced on every write (exactly once needs every
acknowledged commit on disk), announcing its DNS name to clients.
*/}}
{{- define "streamjoin.redisClusterServerScript" -}}
set -eu
umask 077
printf 'requirepass "%s"\nmasterauth "%s"\n' "$REDIS_PASSWORD" "$REDIS_PASSWORD" > "$REDIS_CONF_DIR/auth.conf"
exec redis-server "$REDIS_CONF_DIR/auth.conf" --port 6379 --protected-mode no --cluster-enabled yes --cluster-config-file "$REDIS_DATA_DIR/nodes.conf" --cluster-node-timeout "$REDIS_NODE_TIMEOUT_MS" --cluster-announce-hostname "$REDIS_ANNOUNCE_HOSTNAME" --cluster-preferred-endpoint-type hostname --appendonly yes --appendfsync always --save "" --maxmemory-policy noeviction --dir "$REDIS_DATA_DIR"
{{- end }}

{{/*
Form the cluster once every node answers; when the first node already knows the others, wait for
it to be ok instead (an upgrade, or a retry after a partial run: `--cluster create` refuses nodes
that are not empty). `--cluster create` takes addresses, so names are resolved first.
*/}}
{{- define "streamjoin.redisClusterCreateScript" -}}
set -eu
for node in $REDIS_NODES; do
  until redis-cli -h "$node" -p 6379 ping 2>/dev/null | grep -q PONG; do echo "waiting for $node"; sleep 2; done
done
first=${REDIS_NODES%% *}
known=$(redis-cli -h "$first" -p 6379 cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')
if [ "$known" -gt 1 ]; then
  echo "the cluster exists ($known nodes known)"
else
  addresses=""
  for node in $REDIS_NODES; do
    address=$(getent ahosts "$node" | awk '{print $1; exit}')
    [ -n "$address" ] || { echo "cannot resolve $node"; exit 1; }
    addresses="$addresses $address:6379"
  done
  redis-cli --cluster create $addresses --cluster-replicas "$REDIS_REPLICAS_PER_PRIMARY" --cluster-yes
fi
until redis-cli -h "$first" -p 6379 cluster info | tr -d '\r' | grep -q '^cluster_state:ok'; do echo "waiting for cluster_state:ok"; sleep 2; done
echo "cluster_state:ok"
{{- end }}
