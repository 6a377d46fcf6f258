from django.urls import path

from predictions.api import views

urlpatterns = [
    path("predictions/", views.PredictionListCreate.as_view(), name="prediction-list"),
    path("predictions/<str:id>/", views.PredictionDetail.as_view(), name="prediction-detail"),
    path("symbols/", views.SymbolList.as_view(), name="symbol-list"),
]
