from django.urls import path
from shop import views

urlpatterns = [
    path("orders/", views.create_order),
    path("orders/later/", views.create_order_later),
]
