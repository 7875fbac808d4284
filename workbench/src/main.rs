//! The `workbench` command line.

fn main() {}
