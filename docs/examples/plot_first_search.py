"""
A first search
==============

Select an SVM's ``C`` by 5-fold CV and refit the winner.
"""

from sklearn.datasets import load_iris
from sklearn.svm import SVC

import parcv

X, y = load_iris(return_X_y=True)
result = parcv.search(SVC(), {"C": [0.1, 1, 10]}, X, y, cv=5, backend="serial")
print(result)
