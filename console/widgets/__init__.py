"""Thin widgets: each shows one panel's text (from console.render) and holds no logic of its own."""
