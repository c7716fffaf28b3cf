"""Events out (SPEC §16): webhook endpoints, the outbox their messages wait in, and the
sender that runs on the task engine (django-tasks' database backend)."""
