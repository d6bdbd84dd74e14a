filedesc://fuzz.arc 0.0.0.0 20200101000000 text/plain 65
1 0 fuzz
URL IP-address Archive-date Content-type Archive-length

http://fuzz.test/arc 127.0.0.1 20200101000000 text/html 54
HTTP/1.1 200 OK
Content-Type: text/html

<p>arc</p>
