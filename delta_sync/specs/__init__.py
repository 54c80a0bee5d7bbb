"""Spec files and the project file -> the desired model; `fmt` and `import` write them back."""
