from django.urls import path

from webui import views

urlpatterns = [
    path("", views.index, name="index"),
]
