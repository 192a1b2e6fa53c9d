"""The Website operator: docs/controllers.md walks through it."""
