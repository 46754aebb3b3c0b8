#!/usr/bin/env python3
"""Print a SAS Authorization header for a hub, from a connection string on stdin (benchmark helper).

The same steps as Microsoft's Python REST sample; benchmarks use it to give wrk a valid token.
"""
import base64, hashlib, hmac, sys, time, urllib.parse

hub = sys.argv[1]
parts = dict(p.split("=", 1) for p in sys.stdin.read().strip().split(";") if "=" in p)
endpoint = parts["Endpoint"].replace("sb://", "https://" if parts.get("UseDevelopmentEmulator") != "true" else "http://")
uri = urllib.parse.quote(endpoint + hub, safe="").lower()
expiry = str(int(time.time()) + 3600)
digest = hmac.new(parts["SharedAccessKey"].encode(), (uri + "\n" + expiry).encode(), hashlib.sha256).digest()
print(f"SharedAccessSignature sr={uri}&sig={urllib.parse.quote(base64.b64encode(digest), safe='')}&se={expiry}&skn={parts['SharedAccessKeyName']}")
