"""TensorFlow Serving's REST API, so clients written for it can ask this service.

`POST /v1/models/{model}[/versions/{n}]:predict` with TF Serving's row (`instances`) or
columnar (`inputs`) body, `GET /v1/models/{model}[/versions/{n}]` (version status) and
`GET /v1/models/{model}/metadata` (the signature). `model` is `ensemble` (the combined
forecast) or one member model; an instance is a question, `{"symbol", "horizon"}`. The
answers come from the same place as the REST API's: the cache, else the pipeline.
"""
