"""CustomResourceDefinitions: validation, schemas, CEL rules, conversion calls."""
