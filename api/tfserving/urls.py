"""TF Serving's REST paths at the site root, as its clients expect them."""

from django.urls import re_path

from api.tfserving import views

MODEL = r"(?P<model>[A-Za-z0-9_.-]+)"
VERSION = r"(?:/versions/(?P<version>[^/:]+))?"

urlpatterns = [
    re_path(rf"^v1/models/{MODEL}{VERSION}:predict$", views.Predict.as_view(), name="tfs-predict"),
    re_path(rf"^v1/models/{MODEL}/metadata$", views.Metadata.as_view(), name="tfs-metadata"),
    re_path(rf"^v1/models/{MODEL}{VERSION}$", views.Status.as_view(), name="tfs-status"),
]
