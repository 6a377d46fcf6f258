"""Helpers shared by the tests, one module per subject.

`api`: submitting and waiting through the REST API, finished predictions in the database;
`wsgi`: calling the application gunicorn serves; `processes`: worker processes on the test
database; `live`: staff sessions, websockets and the live stack; `forecasting`: series and
models for the model tests; `prices`: fake Yahoo answers and price providers; `loadtests`:
process bookkeeping for the runner's tests; `testhosts`: the provisioning test's hosts.
"""
