"""gunicorn's settings for ``make run``: the production server in a development
configuration (``gunicorn -c python:lens.gunicorn_dev``).

The same server as ``make serve`` answers kept-alive connections at once: it sets
TCP_NODELAY, where ``runserver`` sends a response in several writes that Nagle's
algorithm holds back until the client's delayed ACK (about 40 ms a request).
"""

from __future__ import annotations

from lens.gunicorn_conf import *  # noqa: F403 (the production settings, then the changes)

# One process, so a breakpoint or a print lands in one place; threads for htmx's
# parallel requests. Code changes restart it.
workers = 1
threads = 4
reload = True
# A debugger may hold a request for as long as it likes.
timeout = 0
max_requests = 0
access_log_format = '"%(r)s" %(s)s %(b)s %(M)sms'
