-- wrk: the template send hubcast makes (same headers, same body size as a seed headline).
wrk.method = "POST"
wrk.body = '{"messageParam":"Breaking World News : Earthquake of magnitude 6.1 strikes off the coast","headline":"Earthquake of magnitude 6.1 strikes off the coast","category":"World","id":"bench-0001"}'
wrk.headers["Content-Type"] = "application/json;charset=utf-8"
wrk.headers["ServiceBusNotification-Format"] = "template"
wrk.headers["ServiceBusNotification-Tags"] = os.getenv("HUBCAST_TAGS") or "World"
wrk.headers["x-ms-version"] = "2020-06"
wrk.headers["Authorization"] = os.getenv("HUBCAST_SAS") or "none"
