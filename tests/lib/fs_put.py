# tests/lib/fs_put.py - one put over an open HTTP connection to etcd
#
# put(conn, api, key, value) puts @key (str) = @value (str, or bytes on
# v3: a protobuf value) over the
# http.client connection @conn: on etcd's v3 JSON gateway (/v3/kv/put)
# when @api is "v3", on /v2/keys when it is "v2".  It raises RuntimeError
# unless etcd answers 200 or 201.  It keeps the connection open for the
# next put, and cannot speak TLS.  Used by tests/lib/puts_http.py, and
# by tests through $FS_PUT_PY (this file's text, for python3 -c), so it
# must stay a library: nothing runs at import.
import base64, http.client, json, sys, urllib.parse


def put(c, api, key, value):
    b64 = lambda s: base64.b64encode(
        s if isinstance(s, bytes) else s.encode()).decode()
    if api == "v2":
        c.request("PUT", "/v2/keys" + urllib.parse.quote(key),
                  urllib.parse.urlencode({"value": value}),
                  {"Content-Type": "application/x-www-form-urlencoded"})
    else:
        c.request("POST", "/v3/kv/put",
                  json.dumps({"key": b64(key), "value": b64(value)}),
                  {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status not in (200, 201):
        raise RuntimeError("put %s: HTTP %d" % (key, r.status))
