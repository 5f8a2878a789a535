"""Record formats beyond JSON: Avro in the Confluent wire format, and Avro schemas of results.

docs/formats.md is the reference. `fastavro` is imported here and nowhere else.
"""

from streamjoin.formats.avro import AvroReader, AvroWriter, check_avro_schema, strip_logical_types
from streamjoin.formats.derive import SchemaDerivationError, avro_fields, columns_schema, result_schema
from streamjoin.formats.wire import WireFormatError, frame, unframe

__all__ = [
    "AvroReader",
    "AvroWriter",
    "SchemaDerivationError",
    "WireFormatError",
    "avro_fields",
    "check_avro_schema",
    "columns_schema",
    "frame",
    "result_schema",
    "strip_logical_types",
    "unframe",
]
