{{/*
The egress rules the NetworkPolicies (networkpolicy.yaml) share. Kafka and Redis are reached by port,
to any address unless networkPolicy.kafka.to / networkPolicy.redis.to name them.
*/}}

{{/* Name resolution: UDP and TCP 53, to any address (kube-dns, or a node-local cache). */}}
{{- define "streamjoin.egressDns" -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end }}

{{/* The brokers' ports: networkPolicy.kafka.ports, else those of the bootstrap addresses, as JSON. */}}
{{- define "streamjoin.kafkaPorts" -}}
{{- $ports := list }}
{{- if .Values.networkPolicy.kafka.ports }}
{{- range .Values.networkPolicy.kafka.ports }}{{ $ports = append $ports (int .) }}{{ end }}
{{- else }}
{{- range splitList "," (include "streamjoin.kafkaBootstrap" .) }}
{{- $ports = append $ports (int (last (splitList ":" (trim .)))) }}
{{- end }}
{{- end }}
{{- toJson (uniq $ports) }}
{{- end }}

{{/* Redis's ports, from the URL the pods get (every node's, for a cluster URL), as JSON. */}}
{{- define "streamjoin.redisPorts" -}}
{{- $ports := list }}
{{- range splitList "," (urlParse (include "streamjoin.redisBaseUrl" .)).host }}
{{- $hostPort := splitList ":" (trim .) }}
{{- $ports = append $ports (ternary (int (last $hostPort)) 6379 (gt (len $hostPort) 1)) }}
{{- end }}
{{- toJson (uniq $ports) }}
{{- end }}

{{- define "streamjoin.egressKafka" -}}
- ports:
    {{- range (include "streamjoin.kafkaPorts" . | fromJsonArray) }}
    - port: {{ int . }}
      protocol: TCP
    {{- end }}
  {{- with .Values.networkPolicy.kafka.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{- define "streamjoin.egressRedis" -}}
- ports:
    {{- range (include "streamjoin.redisPorts" . | fromJsonArray) }}
    - port: {{ int . }}
      protocol: TCP
    {{- end }}
  {{- with .Values.networkPolicy.redis.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* HTTPS to any address: a remote archive (s3://...), read by the archiver and the back-fill jobs. */}}
{{- define "streamjoin.egressHttps" -}}
- ports:
    - port: 443
      protocol: TCP
{{- end }}
