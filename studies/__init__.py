"""The studies beside the library: each folder one study, its runs, readings and pages."""
