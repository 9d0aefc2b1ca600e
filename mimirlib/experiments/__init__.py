"""The experiment layer: one module per chapter, composing the library for one paper section into tidy frames."""
