{{/*
Names, labels and the configuration every streamjoin container shares.
The STREAMJOIN_* variables are the configuration contract (README.md, "Configuration").
*/}}

{{- define "streamjoin.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "streamjoin.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "streamjoin.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels; pass (dict "ctx" $ "component" "api"). */}}
{{- define "streamjoin.labels" -}}
helm.sh/chart: {{ include "streamjoin.chart" .ctx }}
{{ include "streamjoin.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: streamjoin
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "streamjoin.selectorLabels" -}}
app.kubernetes.io/name: {{ include "streamjoin.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end }}

{{- define "streamjoin.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "streamjoin.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The product image: repository:tag, or repository@digest when a digest is pinned. */}}
{{- define "streamjoin.image" -}}
{{- $repository := .Values.image.repository }}
{{- if .Values.image.registry }}
{{- $repository = printf "%s/%s" .Values.image.registry .Values.image.repository }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The in-cluster dependency's service name (Bitnami's fullname rule with nameOverride). */}}
{{- define "streamjoin.dependencyFullname" -}}
{{- $name := .name }}
{{- if contains $name .ctx.Release.Name }}
{{- .ctx.Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .ctx.Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* STREAMJOIN_KAFKA_BOOTSTRAP. */}}
{{- define "streamjoin.kafkaBootstrap" -}}
{{- if .Values.kafkaInCluster.enabled }}
{{- printf "%s:9092" (include "streamjoin.dependencyFullname" (dict "ctx" . "name" .Values.kafkaInCluster.nameOverride)) }}
{{- else if .Values.kafka.bootstrap }}
{{- .Values.kafka.bootstrap }}
{{- else }}
{{- fail "kafka.bootstrap is empty: set it to your brokers (host:port[,host:port]), or set kafkaInCluster.enabled=true" }}
{{- end }}
{{- end }}

{{/* STREAMJOIN_REDIS_URL without credentials (they are added from the Secret at run time). */}}
{{- define "streamjoin.redisBaseUrl" -}}
{{- if .Values.redisInCluster.enabled }}
{{- printf "redis://%s-master:6379/0" (include "streamjoin.dependencyFullname" (dict "ctx" . "name" .Values.redisInCluster.nameOverride)) }}
{{- else if .Values.redisCluster.enabled }}
{{- include "streamjoin.redisClusterUrl" . }}
{{- else if .Values.redis.url }}
{{- .Values.redis.url }}
{{- else }}
{{- fail "redis.url is empty: set it to your Redis (redis://host:6379/0, rediss:// for TLS), or set redisInCluster.enabled=true" }}
{{- end }}
{{- end }}

{{/* The Secret holding Redis's password: Redis always has one (an open Redis is anyone's state).
In-cluster: the Bitnami chart's own Secret; else the inline password's; else redis.existingSecret. */}}
{{- define "streamjoin.redisPasswordSecret" -}}
{{- if .Values.redisInCluster.enabled }}
{{- include "streamjoin.dependencyFullname" (dict "ctx" . "name" .Values.redisInCluster.nameOverride) }}
{{- else if .Values.redisCluster.enabled }}
{{- default (include "streamjoin.redisClusterName" .) .Values.redisCluster.existingSecret }}
{{- else if .Values.redis.password }}
{{- printf "%s-redis" (include "streamjoin.fullname" .) }}
{{- else if .Values.redis.existingSecret }}
{{- .Values.redis.existingSecret }}
{{- else }}
{{- fail "Redis needs a password: set redis.existingSecret (a Secret with the password) or redis.password" }}
{{- end }}
{{- end }}

{{- define "streamjoin.redisPasswordKey" -}}
{{- if .Values.redisCluster.enabled }}{{ ternary .Values.redisCluster.existingSecretPasswordKey "redis-password" (not (empty .Values.redisCluster.existingSecret)) }}
{{- else if or .Values.redisInCluster.enabled .Values.redis.password }}redis-password{{ else }}{{ .Values.redis.existingSecretPasswordKey }}{{ end }}
{{- end }}

{{/* The Redis URL as a container env value; $(STREAMJOIN_REDIS_PASSWORD) is expanded by the kubelet. */}}
{{- define "streamjoin.redisUrl" -}}
{{- $u := urlParse (include "streamjoin.redisBaseUrl" .) }}
{{- $scheme := $u.scheme }}
{{- if and .Values.redis.tls.enabled (hasPrefix "redis" $scheme) (not (hasPrefix "rediss" $scheme)) }}
{{- $scheme = replace "redis" "rediss" $scheme }}
{{- end }}
{{- if include "streamjoin.redisPasswordSecret" . }}
{{- printf "%s://%s:$(STREAMJOIN_REDIS_PASSWORD)@%s%s" $scheme (default "" .Values.redis.username) $u.host $u.path }}
{{- else }}
{{- printf "%s://%s%s" $scheme $u.host $u.path }}
{{- end }}
{{- end }}

{{/* The Secret holding the API token, and its key. */}}
{{- define "streamjoin.apiTokenSecret" -}}
{{- default (printf "%s-api-token" (include "streamjoin.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{- define "streamjoin.apiTokenKey" -}}
{{- if .Values.auth.existingSecret }}{{ .Values.auth.existingSecretKey }}{{ else }}api-token{{ end }}
{{- end }}

{{/* The Secret holding the registry log's key, and its key. */}}
{{- define "streamjoin.registryKeySecret" -}}
{{- default (printf "%s-registry-key" (include "streamjoin.fullname" .)) .Values.registryKey.existingSecret }}
{{- end }}

{{- define "streamjoin.registryKeyKey" -}}
{{- if .Values.registryKey.existingSecret }}{{ .Values.registryKey.existingSecretKey }}{{ else }}registry-key{{ end }}
{{- end }}

{{/*
The Secret and key of the SASL password: yours (kafka.sasl.existingSecret), the in-cluster Bitnami
chart's (its user passwords; with one client user, `client-passwords` is that user's password), or
the chart's own (templates/secret-kafka.yaml: the inline password, else a generated one).
*/}}
{{- define "streamjoin.kafkaPasswordSecret" -}}
{{- if .Values.kafka.sasl.existingSecret }}
{{- .Values.kafka.sasl.existingSecret }}
{{- else if .Values.kafkaInCluster.enabled }}
{{- printf "%s-user-passwords" (include "streamjoin.dependencyFullname" (dict "ctx" . "name" .Values.kafkaInCluster.nameOverride)) }}
{{- else }}
{{- printf "%s-kafka-sasl" (include "streamjoin.fullname" .) }}
{{- end }}
{{- end }}

{{- define "streamjoin.kafkaPasswordKey" -}}
{{- if .Values.kafka.sasl.existingSecret }}{{ .Values.kafka.sasl.existingSecretPasswordKey }}
{{- else if .Values.kafkaInCluster.enabled }}client-passwords
{{- else }}password{{ end }}
{{- end }}

{{/* The SASL user name: the in-cluster Bitnami chart's first client user, else kafka.sasl.username. */}}
{{- define "streamjoin.kafkaUsername" -}}
{{- if .Values.kafkaInCluster.enabled }}
{{- $users := ((.Values.kafkaInCluster.sasl).client).users | default list }}
{{- if ne (len $users) 1 }}
{{- fail "kafkaInCluster.sasl.client.users must name exactly one user: streamjoin logs in as it" }}
{{- end }}
{{- first $users }}
{{- else }}
{{- .Values.kafka.sasl.username }}
{{- end }}
{{- end }}

{{/*
Environment of every streamjoin container: the shared ConfigMap plus the values that come from
Secrets. Pass (dict "ctx" $ "token" true) to also mount the API token, and "registryKey" true for
the registry log's key (the control plane only).
*/}}
{{- define "streamjoin.envFrom" -}}
- configMapRef:
    name: {{ include "streamjoin.fullname" .ctx }}-config
{{- end }}

{{- define "streamjoin.env" -}}
{{- $ctx := .ctx }}
{{- if $ctx.Values.kafka.sasl.enabled }}
- name: STREAMJOIN_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "streamjoin.kafkaPasswordSecret" $ctx }}
      key: {{ include "streamjoin.kafkaPasswordKey" $ctx }}
{{- end }}
{{- with include "streamjoin.redisPasswordSecret" $ctx }}
- name: STREAMJOIN_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ include "streamjoin.redisPasswordKey" $ctx }}
{{- end }}
- name: STREAMJOIN_REDIS_URL
  value: {{ include "streamjoin.redisUrl" $ctx | quote }}
{{- if $ctx.Values.redis.cluster }}
- name: STREAMJOIN_REDIS_CLUSTER
  value: "true"
{{- end }}
{{- with ternary $ctx.Values.redisCluster.commitReplicas $ctx.Values.redis.commitReplicas $ctx.Values.redisCluster.enabled }}
- name: STREAMJOIN_REDIS_COMMIT_REPLICAS
  value: {{ . | quote }}
{{- end }}
{{- if .token }}
- name: STREAMJOIN_API_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "streamjoin.apiTokenSecret" $ctx }}
      key: {{ include "streamjoin.apiTokenKey" $ctx }}
{{- end }}
{{- if .registryKey }}
- name: STREAMJOIN_REGISTRY_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "streamjoin.registryKeySecret" $ctx }}
      key: {{ include "streamjoin.registryKeyKey" $ctx }}
{{- end }}
{{- with $ctx.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Volumes for TLS material; empty when no TLS secret is set. */}}
{{- define "streamjoin.tlsVolumes" -}}
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.existingSecret }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafka.tls.existingSecret }}
{{- end }}
{{- if and .Values.redis.tls.enabled .Values.redis.tls.existingSecret }}
- name: redis-tls
  secret:
    secretName: {{ .Values.redis.tls.existingSecret }}
{{- end }}
{{- end }}

{{- define "streamjoin.tlsVolumeMounts" -}}
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.existingSecret }}
- name: kafka-tls
  mountPath: /etc/streamjoin/kafka-tls
  readOnly: true
{{- end }}
{{- if and .Values.redis.tls.enabled .Values.redis.tls.existingSecret }}
- name: redis-tls
  mountPath: /etc/streamjoin/redis-tls
  readOnly: true
{{- end }}
{{- end }}

{{/* Pod and container security settings shared by every streamjoin pod. */}}
{{- define "streamjoin.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext }}
{{- end }}

{{- define "streamjoin.containerSecurityContext" -}}
{{- toYaml .Values.securityContext }}
{{- end }}

{{/* Roll pods when the shared configuration changes. */}}
{{- define "streamjoin.configChecksum" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- end }}

{{/*
The non-secret Kafka settings as a YAML map of STREAMJOIN_* variables: the shared ConfigMap holds
them, and the topic Job (a hook that can run before the ConfigMap exists) gets them inline.
*/}}
{{- define "streamjoin.kafkaSettings" -}}
{{- $protocol := "PLAINTEXT" }}
{{- if and .Values.kafka.tls.enabled .Values.kafka.sasl.enabled }}{{ $protocol = "SASL_SSL" }}
{{- else if .Values.kafka.tls.enabled }}{{ $protocol = "SSL" }}
{{- else if .Values.kafka.sasl.enabled }}{{ $protocol = "SASL_PLAINTEXT" }}
{{- end }}
{{- if and .Values.production (eq $protocol "PLAINTEXT") (not .Values.kafka.allowPlaintext) }}
{{- fail "production: true refuses a plaintext, unauthenticated Kafka connection: enable kafka.sasl and/or kafka.tls, or set kafka.allowPlaintext=true to accept it" }}
{{- end }}
STREAMJOIN_KAFKA_BOOTSTRAP: {{ include "streamjoin.kafkaBootstrap" . | quote }}
STREAMJOIN_KAFKA_SECURITY_PROTOCOL: {{ $protocol | quote }}
{{- if .Values.kafka.sasl.enabled }}
STREAMJOIN_KAFKA_SASL_MECHANISM: {{ .Values.kafka.sasl.mechanism | quote }}
STREAMJOIN_KAFKA_SASL_USERNAME: {{ include "streamjoin.kafkaUsername" . | quote }}
{{- end }}
{{- if .Values.kafka.allowPlaintext }}
STREAMJOIN_KAFKA_ALLOW_PLAINTEXT: "true"
{{- end }}
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.existingSecret }}
STREAMJOIN_KAFKA_TLS_CA_FILE: {{ printf "/etc/streamjoin/kafka-tls/%s" .Values.kafka.tls.caKey | quote }}
{{- if .Values.kafka.tls.certKey }}
STREAMJOIN_KAFKA_TLS_CERT_FILE: {{ printf "/etc/streamjoin/kafka-tls/%s" .Values.kafka.tls.certKey | quote }}
STREAMJOIN_KAFKA_TLS_KEY_FILE: {{ printf "/etc/streamjoin/kafka-tls/%s" .Values.kafka.tls.keyKey | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The hook phase of the topic Job: before the services, unless Kafka itself is installed by this release. */}}
{{- define "streamjoin.topicsHook" -}}
{{- if .Values.kafkaInCluster.enabled }}post-install,post-upgrade{{ else }}pre-install,pre-upgrade{{ end }}
{{- end }}

{{/*
The alert group whose threshold depends on the release: fewer live joiner workers than expected
(metrics.alerts.expectedWorkers, else autoscaling.minReplicas with the HPA, else joiner.replicas).
Empty when no worker is expected.
*/}}
{{- define "streamjoin.workerRules" -}}
{{- $j := .Values.joiner }}
{{- $expected := int .Values.metrics.alerts.expectedWorkers }}
{{- if eq $expected 0 }}
{{- $expected = int (ternary $j.autoscaling.minReplicas $j.replicas $j.autoscaling.enabled) }}
{{- end }}
{{- if gt $expected 0 }}
- name: streamjoin-workers
  rules:
    - alert: StreamjoinWorkersMissing
      expr: max(streamjoin_workers) < {{ $expected }}
      for: 5m
      labels:
        severity: warning
      annotations:
        summary: "Fewer joiner workers than expected"
        description: "{{ "{{" }} $value {{ "}}" }} joiner workers have a live heartbeat; this release runs {{ $expected }}. A worker that is not ready stops its heartbeat."
{{- end }}
{{- end }}
