"""gunicorn's settings for ``make serve`` (``gunicorn -c python:lens.gunicorn_conf``).

Every value can be overridden on the command line or, where named, from the
environment; gunicorn also reads ``GUNICORN_CMD_ARGS``.
"""

from __future__ import annotations

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"

# Chosen by measurement on a 2-core machine: GET /api/kv/<key> on SQLite, keep-alive
# clients on loopback for 5 s each (client on the same cores; requests/s, p50, p99):
#   sync    2 workers            1 client: 186/s 3.7 ms 21 ms   8 clients: 233/s 24 ms 194 ms
#   sync    5 workers            1 client: 144/s 4.0 ms 24 ms   8 clients: 257/s 23 ms  94 ms
#   gthread 2 workers x 4 threads 1 client: 245/s 3.1 ms  9 ms   8 clients: 376/s 16 ms 133 ms
#   gthread 2 workers x 8 threads 1 client: 183/s 3.9 ms 16 ms   8 clients: 317/s 16 ms 100 ms
#   gthread 4 workers x 2 threads 1 client: 189/s 3.6 ms 26 ms   8 clients: 193/s 23 ms 181 ms
# The sync worker closes every connection (no keep-alive) and one slow request blocks
# its process; threads overlap database waits. One process per core, four threads each.
# With DB_POOL=1 each process keeps its own pool: DB_POOL_MAX_SIZE >= threads.
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))

# A request that has not answered in 30 s is stuck: its worker is replaced.
timeout = 30
graceful_timeout = 30
# Behind a proxy that keeps connections open, idle keep-alive sockets cost one file each.
keepalive = 5
# Recycle each worker after about this many requests, staggered so they never restart
# together: bounds the memory any slow leak can take.
max_requests = 2000
max_requests_jitter = 200

# Access log on stdout with the request time in milliseconds (%(M)s); errors on stderr.
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'
# X-Forwarded-* is trusted only from these proxy addresses (gunicorn's own check;
# Django reads X-Forwarded-Proto itself when HTTPS=1).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# No runtime control socket (gunicornc): its default path is shared by every server on
# the machine, so a second instance would take over the first one's.
control_socket_disable = True
