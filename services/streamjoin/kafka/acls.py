"""Kafka ACLs: what a principal may do, and the set every streamjoin service needs.

`AclGrant` is one ALLOW binding (principal, operation, resource) in plain types; `Admin.create_acls`
writes grants through confluent-kafka's admin API (what `kafka-acls.sh --add` does). On a cluster
whose authorizer denies what no ACL allows (`allow.everyone.if.no.acl.found=false`),
`streamjoin_acls` is what the product's principal needs (docs/deploy.md, "ACLs"):

- its **internal topics**, every one named `streamjoin.` (the registry's log, the progress markers,
  the joiners' anchor, the re-keyed inputs' `streamjoin.repartition.*`, the default dead-letter
  topic): read, write, describe, create (the joiners create what is missing), delete (the
  re-keyed inputs' topics go with their query);
- its **input topics**: read, describe, and create (the topic job creates the declared ones);
- its **output and dead-letter topics**: write and describe (the joiners, the back-fill), read (the
  control plane's results endpoint), create (the joiners create a query's output if missing);
- its **consumer group** (the joiners' Faust group): read, describe;
- the **cluster**: idempotent write (the joiners' and the back-fill's producers are idempotent).

No transactional id: the joiners write exactly once through their idempotent producers and their
Redis checkpoints, not Kafka transactions (docs/exactly-once.md).

>>> [str(g) for g in streamjoin_acls("User:sj", inputs=["in."], outputs=["out."])][:2]
['User:sj ALLOW read topic prefixed:streamjoin.', 'User:sj ALLOW write topic prefixed:streamjoin.']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "CLUSTER",
    "INTERNAL_PREFIX",
    "JOINER_GROUP",
    "AclGrant",
    "AclOperation",
    "AclPattern",
    "AclResource",
    "streamjoin_acls",
]

AclOperation: TypeAlias = Literal[
    "read", "write", "create", "delete", "describe", "describe_configs", "alter", "alter_configs",
    "idempotent_write", "cluster_action", "all",
]  # fmt: skip
"""Kafka's ACL operations (`kafka-acls.sh --operation`), lower case."""

AclResource: TypeAlias = Literal["topic", "group", "cluster", "transactional_id"]
"""The resource types streamjoin grants on."""

AclPattern: TypeAlias = Literal["literal", "prefixed"]
"""How a grant's name matches: the one resource of that name, or every name starting with it."""

CLUSTER = "kafka-cluster"
"""The name of the cluster resource (Kafka's only one)."""

INTERNAL_PREFIX = "streamjoin."
"""Every topic the product itself names starts with this (topics/topics.json, the re-keyed inputs)."""

JOINER_GROUP = "streamjoin-joiner"
"""The joiners' consumer group by default (`streamjoin joiner --group`)."""


@dataclass(frozen=True, slots=True)
class AclGrant:
    """Allow `principal` (`User:name`) to do `operation` on a resource, from any host.

    >>> str(AclGrant("User:sj", "read", "topic", "in.", "prefixed"))
    'User:sj ALLOW read topic prefixed:in.'
    """

    principal: str
    operation: AclOperation
    resource: AclResource
    name: str
    pattern: AclPattern = "literal"
    host: str = "*"

    def __str__(self) -> str:
        return f"{self.principal} ALLOW {self.operation} {self.resource} {self.pattern}:{self.name}"


def _grants(
    principal: str,
    operations: Iterable[AclOperation],
    resource: AclResource,
    names: Iterable[str],
    pattern: AclPattern,
) -> list[AclGrant]:
    return [AclGrant(principal, op, resource, name, pattern) for name in names for op in operations]


def streamjoin_acls(
    principal: str,
    *,
    inputs: Iterable[str],
    outputs: Iterable[str],
    group: str = JOINER_GROUP,
    pattern: AclPattern = "prefixed",
) -> tuple[AclGrant, ...]:
    """Return every grant the product's services need, as `principal` (module docstring).

    Args:
        principal: the services' principal, `User:<SASL user name>`.
        inputs: the input topics (names, or prefixes with `pattern="prefixed"`).
        outputs: the output and dead-letter topics the queries write (same).
        group: the joiners' consumer group.
        pattern: how `inputs` and `outputs` match topic names.
    """
    return (
        *_grants(
            principal,
            ("read", "write", "describe", "create", "delete"),
            "topic",
            [INTERNAL_PREFIX],
            "prefixed",
        ),
        *_grants(principal, ("read", "describe", "create"), "topic", inputs, pattern),
        *_grants(principal, ("write", "read", "describe", "create"), "topic", outputs, pattern),
        *_grants(principal, ("read", "describe"), "group", [group], "literal"),
        AclGrant(principal, "idempotent_write", "cluster", CLUSTER),
    )
