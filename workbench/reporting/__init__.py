"""What `workbench report` and the plots make of replay runs: reading run folders (`runs`), the per-session
tables (`sessions`), the report itself (`report`) and its text (`render`), recovery per session group
(`recovery_groups`) and the matplotlib figures (`plots`)."""
