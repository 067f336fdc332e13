#!/usr/bin/env python3
"""Reference mattes for the real-photograph fixtures (packages/engine/test/fixtures).

Each matte is GrabCut (OpenCV, Debian's python3-opencv) started from hints chosen by
hand for that photo: sure-subject and sure-background polygons and strokes in the
photo's pixel coordinates, then hand fix-ups (polygons added or cut after GrabCut),
only the parts connected to a sure-subject hint kept, and holes filled unless the
photo's subject has real ones. Every matte was looked at as an overlay and the
hints adjusted until it was right; the committed PNGs are the truth the tests use,
this script records how they were made. potted-plant.png is not made here: it is
OpenCV's own alpha-matting sample result for that photo (from a hand-drawn trimap),
copied by real-photo-fixtures.py.

    /usr/bin/python3 scripts/reference-mattes.py [--preview DIR] [NAME ...]

writes fixtures/mattes/NAME.png (white subject on black, 0 or 255) and, with
--preview, DIR/NAME.png: the photo beside the cut-out on a checkerboard.
"""
import argparse
import os
import sys

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "packages", "engine", "test", "fixtures")



def ellipse(center, half_axes, angle, start=0, end=360):
    """Points tracing an ellipse or an arc of it (a saucer, a wheel), for the hints below."""
    return [tuple(int(v) for v in point) for point in cv2.ellipse2Poly(center, half_axes, angle, start, end, 2)]


def snapped_ellipse(image, center, half_axes, angle, band=25, drop=12):
    """The ellipse's outline moved, ray by ray from its centre, to where a red saucer
    ends: scanning outward from `band` px inside the ellipse to `band` px outside, the
    first pixel of four in a row whose CIELAB a* (red-green) is `drop` below the
    saucer's (the upper quartile of the ray's first ten pixels), whether the table or the saucer's shadow
    lies beyond. Specular highlights on the rim (very
    light, hence little red) do not count as an end. Rays that find no end keep the
    ellipse."""
    lab = cv2.GaussianBlur(cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32), (0, 0), 1.0)
    a_star, lightness = lab[:, :, 1], lab[:, :, 0]
    height, width = a_star.shape
    outline = cv2.ellipse2Poly(center, half_axes, angle, 0, 360, 1)[:-1].astype(np.float64)
    radii, directions = [], []
    for point in outline:
        offset = point - center
        radius = float(np.hypot(*offset))
        direction = offset / radius
        steps = np.arange(radius - band, radius + band + 0.5, 1.0)
        xs = np.clip(np.round(center[0] + direction[0] * steps).astype(int), 0, width - 1)
        ys = np.clip(np.round(center[1] + direction[1] * steps).astype(int), 0, height - 1)
        profile = a_star[ys, xs]
        outside = (profile < np.percentile(profile[:10], 75) - drop) & (lightness[ys, xs] < 170)
        runs = np.convolve(outside.astype(int), np.ones(4, int), "valid") == 4
        if runs.any():
            radius = float(steps[np.argmax(runs)])
        radii.append(radius)
        directions.append(direction)
    radii = np.array(radii)
    # A running median over 7 degrees keeps a speck on the table from denting the rim.
    padded = np.concatenate([radii[-3:], radii, radii[:3]])
    radii = np.array([np.median(padded[i : i + 7]) for i in range(len(radii))])
    return [(int(round(center[0] + d[0] * r)), int(round(center[1] + d[1] * r))) for d, r in zip(directions, radii)]


# Per photo: "rect" (x0, y0, x1, y1): outside is sure background, inside probable
# subject; without it everything starts as probable subject. "fg" / "bg": sure
# polygons; "fg_lines" / "bg_lines": (width, [points]) strokes for thin parts;
# "bg_outside": all outside these polygons is sure background; "cut" then "add" /
# "add_lines": forced after GrabCut; "holes": keep enclosed background.
HINTS = {
    "cat": {
        "fg": [[(40, 40), (330, 10), (350, 100), (340, 200), (280, 270), (60, 290), (30, 150)]],
        "bg": [
            [(0, 0), (20, 0), (15, 60), (0, 90)],
            [(400, 0), (451, 0), (451, 300), (355, 300), (350, 260), (372, 200), (378, 120), (395, 60)],
        ],
    },
    "dog": {
        "fg": [
            [(150, 60), (350, 50), (440, 200), (460, 350), (420, 420), (320, 460), (150, 500), (20, 430), (20, 120)],
            # The dark right ear, which GrabCut otherwise gives to the black cloth's colours.
            [(420, 120), (445, 140), (465, 190), (472, 240), (455, 270), (435, 260), (425, 200)],
        ],
        "bg": [
            [(0, 0), (140, 0), (135, 40), (90, 90), (0, 95)],
            [(140, 0), (360, 0), (300, 20), (200, 25)],
            [(380, 0), (512, 0), (512, 400), (470, 400), (468, 330), (500, 285), (508, 200), (485, 120), (430, 55)],
            [(512, 400), (512, 512), (330, 512), (340, 460), (420, 430), (480, 400)],
            [(0, 450), (60, 460), (110, 490), (120, 512), (0, 512)],
        ],
    },
    "grace-hopper": {
        "fg": [[(170, 100), (360, 100), (365, 290), (330, 330), (500, 420), (512, 600), (30, 600), (40, 400), (150, 352), (212, 348),
             (205, 290), (168, 240), (162, 180)]],
        "bg": [
            [(0, 0), (512, 0), (512, 390), (460, 360), (380, 340), (370, 150), (340, 40), (270, 20), (200, 30), (150, 80),
             (140, 230), (150, 310), (60, 355), (0, 375)],
            [(0, 390), (12, 400), (10, 600), (0, 600)],
            # The flag's gold fringe between her ear and her shoulder.
            [(90, 180), (150, 175), (153, 240), (160, 285), (185, 295), (196, 305), (195, 316), (150, 336), (90, 348)],
        ],
    },
    "cameraman": {
        # Greyscale, so GrabCut gets little to go on below the arms: there the grass is
        # cut by hand along the coat, and the tripod drawn back in as measured strokes.
        "fg": [
            [(160, 120), (240, 80), (262, 120), (262, 140), (250, 170), (240, 205), (275, 215), (290, 240), (298, 300),
             (240, 312), (200, 302), (160, 335), (148, 380), (140, 512), (0, 512), (0, 260), (60, 180)],
            [(262, 142), (322, 142), (322, 175), (262, 175)],
            [(310, 175), (328, 180), (328, 225), (305, 228)],
        ],
        "bg": [
            [(0, 0), (512, 0), (512, 232), (340, 232), (335, 200), (335, 165), (326, 132), (275, 125), (268, 95), (245, 70),
             (200, 55), (170, 80), (150, 110), (60, 150), (0, 180)],
            [(0, 175), (52, 172), (42, 195), (28, 218), (10, 246), (0, 256)],
        ],
        "cut": [
            [(152, 512), (150, 400), (160, 365), (167, 349), (185, 322), (206, 299), (225, 308), (245, 315), (262, 307),
             (280, 295), (292, 287), (304, 280), (304, 260), (306, 236), (340, 232), (512, 232), (512, 512)],
        ],
        "add": [[(279, 313), (300, 313), (300, 344), (279, 344)], [(286, 470), (300, 470), (300, 488), (286, 488)],
                [(228, 490), (246, 490), (244, 512), (226, 512)],
                [(322, 299), (337, 299), (337, 308), (322, 308)]],
        "add_lines": [
            (9, [(294, 200), (294, 485)]),
            # Leg centres from the tubes' highlights (brightest pixels of rows 340 to 500).
            (9, [(284, 340), (267, 400), (253, 450), (238, 500), (235, 512)]),
            (7, [(315, 340), (346, 400), (373, 450), (399, 500), (405, 512)]),
            (4, [(300, 322), (335, 303)]),
            (3, [(262, 468), (290, 478)]),
            (3, [(240, 490), (290, 482)]),
            (3, [(298, 483), (388, 482)]),
        ],
        "holes": True,
    },
    "raccoon": {
        "fg": [[(50, 20), (800, 20), (900, 150), (880, 300), (700, 380), (650, 480), (560, 520), (420, 480), (300, 400),
                (150, 340), (20, 280)]],
        "bg": [
            [(0, 380), (150, 420), (250, 450), (330, 520), (400, 640), (420, 768), (0, 768)],
            [(960, 0), (1024, 0), (1024, 768), (700, 768), (760, 620), (900, 560), (940, 400), (950, 250)],
            [(880, 0), (1024, 0), (1024, 100), (940, 90), (880, 40)],
        ],
    },
    "squirrel": {
        # The squirrel alone: neither the branch it sits on nor the bark it holds.
        "rect": (120, 100, 365, 365),
        "fg": [[(200, 120), (250, 125), (280, 130), (330, 145), (350, 180), (320, 210), (300, 240), (280, 290), (250, 310),
                (200, 345), (150, 320), (140, 260), (180, 180)]],
        "bg": [
            [(300, 265), (335, 255), (400, 248), (535, 160), (535, 426), (175, 426), (235, 352), (285, 322), (295, 290)],
            [(338, 215), (360, 212), (395, 240), (390, 262), (335, 258)],
            [(240, 95), (320, 95), (320, 115), (285, 122), (262, 118), (245, 108)],
        ],
    },
    "butterfly": {
        "rect": (3, 15, 489, 320),
        "fg": [[(30, 200), (130, 130), (220, 110), (300, 110), (400, 125), (470, 190), (440, 215), (400, 222), (360, 238), (320, 268), (240, 260),
                (150, 280), (60, 230)], [(215, 85), (245, 85), (245, 110), (215, 110)]],
        "bg": [[(452, 227), (410, 238), (380, 250), (372, 262), (400, 300), (420, 320), (489, 320), (489, 222)]],
        "add_lines": [(2, [(220, 76), (190, 50), (159, 27)]), (2, [(236, 76), (265, 45), (298, 20)])],
    },
    "apple": {
        "rect": (30, 3, 475, 505),
        "fg": [[(80, 100), (200, 65), (300, 65), (420, 100), (450, 250), (400, 420), (300, 480), (150, 470), (80, 350), (60, 230)]],
        "fg_lines": [(5, [(200, 10), (212, 32), (225, 62)])],
    },
    "dahlia": {
        # Both dahlias: the second, cut by the bottom edge, is as sharp as the first.
        "rect": (160, 80, 475, 427),
        "fg": [[(300, 110), (400, 150), (425, 230), (390, 320), (300, 345), (210, 310), (180, 220), (220, 130)],
               [(320, 400), (360, 385), (420, 400), (430, 427), (310, 427)]],
    },
    "astronaut": {
        # Eileen Collins and the helmet she holds; not the flag or the shuttle model. The
        # helmet's black visor meets the black backdrop, so its shell is traced by hand.
        "fg": [[(195, 30), (280, 35), (292, 90), (272, 125), (262, 160), (258, 175), (285, 200), (300, 235), (340, 300),
                (350, 340), (280, 420), (276, 512), (30, 512), (40, 320), (100, 240), (120, 190), (185, 160), (178, 120),
                (160, 70)]],
        "bg": [
            [(0, 0), (60, 0), (95, 160), (85, 240), (40, 300), (15, 380), (8, 512), (0, 512)],
            [(50, 0), (512, 0), (512, 265), (372, 275), (355, 225), (310, 168), (300, 95), (285, 25), (255, 8), (160, 10),
             (140, 60), (150, 120), (140, 170), (110, 200), (85, 235), (50, 275)],
            [(372, 275), (512, 265), (512, 455), (497, 455), (490, 425), (470, 380), (440, 355), (380, 343), (372, 325)],
            [(100, 0), (150, 0), (150, 60), (152, 95), (162, 122), (176, 135), (176, 146), (148, 146), (120, 166), (100, 180)],
            [(305, 0), (380, 0), (380, 215), (322, 225), (302, 205), (282, 180), (272, 160), (276, 142), (290, 137), (298, 122),
             (303, 100)],
        ],
        "add": [[(276, 512), (278, 470), (288, 435), (302, 405), (322, 380), (348, 358), (380, 346), (410, 345), (440, 354),
                 (465, 372), (482, 398), (492, 428), (497, 455), (512, 455), (512, 512)]],
    },
    "coffee": {
        # Cup, saucer and spoon. The saucer's rim is close to the table's colour: it is an
        # ellipse fitted (cv2.fitEllipse) to 22 points read on the rim, snapped to the rim
        # where the rim shows (see snapped_ellipse); GrabCut only finds the cup's top.
        "saucer": ((277, 233), (172, 210), 101),
        "rect": (168, 5, 435, 112),
        "fg": [[(190, 45), (375, 45), (395, 100), (180, 100)]],
        "fg_lines": [(4, [(408, 75), (414, 110)])],
    },
    "fallen-leaf": {
        # The sharp maple leaf; the blurred leaves around it are background.
        "rect": (645, 225, 1195, 640),
        "fg": [[(860, 320), (920, 340), (950, 420), (1040, 440), (1100, 470), (1120, 520), (1040, 570), (960, 600), (860, 570),
                (760, 540), (740, 460), (800, 450), (840, 420)],
               # The top point and the curled, lit lobe on the right.
               [(858, 240), (866, 240), (874, 285), (850, 285)],
               [(1093, 300), (1099, 330), (1097, 380), (1088, 415), (1060, 400), (1070, 350)]],
    },
    "motorcycle": {
        # The motorcycle with its mirrors, signals and kickstand. The clutter behind it is
        # marked as background by hand all round; GrabCut decides a band along the
        # outline. The wheels are kept whole: seeds in the floor seen between the spokes
        # took the brake disc and spokes with them.
        "fg": [
            [(160, 178), (230, 185), (300, 198), (360, 188), (420, 172), (470, 185), (478, 230), (465, 330), (440, 362),
             (340, 365), (300, 335), (275, 290), (250, 268), (180, 258), (140, 240), (150, 195)],
            [(95, 203), (118, 203), (118, 222), (95, 222)],
            ellipse((535, 152), (24, 26), 0),
            [(462, 177), (485, 177), (485, 196), (462, 196)],
            [(560, 120), (582, 120), (582, 141), (560, 141)],
            [(545, 272), (625, 282), (640, 300), (600, 300), (560, 292)],
        ],
        "fg_lines": [
            (8, ellipse((191, 320), (62, 73), 0)),
            # The front tyre: an ellipse fitted to 14 points read on its outer edge, less 5 px.
            (8, ellipse((595, 359), (72, 98), 139)),
            (5, [(492, 190), (528, 282), (555, 355)]),
            (5, [(538, 198), (578, 265)]),
            (6, [(185, 315), (300, 343), (430, 372)]),
            (4, [(322, 372), (334, 430)]),
            (6, [(358, 170), (385, 152), (420, 140), (465, 130)]),
            (3, [(360, 130), (390, 140)]),
        ],
        "add": [[(332, 120), (365, 118), (367, 138), (335, 141)], [(487, 50), (503, 50), (505, 108), (493, 108)]],
        # The floor just outside the front tyre, below the fender, whose shadow GrabCut
        # takes for rubber: cut along the fitted outer edge.
        "cut": [[*ellipse((595, 359), (77, 103), 139, 190, 360), *ellipse((595, 359), (77, 103), 139, 0, 40), (480, 348),
                 (480, 480), (700, 480), (700, 318)]],
        "bg": [
            [(0, 0), (325, 0), (325, 150), (300, 178), (230, 172), (180, 160), (152, 155), (132, 165), (125, 195), (85, 196),
             (0, 196)],
            [(0, 196), (88, 198), (92, 228), (105, 245), (120, 252), (118, 330), (122, 372), (140, 402), (195, 412), (252, 402),
             (282, 380), (312, 378), (316, 440), (300, 500), (0, 500)],
            [(300, 500), (316, 440), (352, 440), (350, 405), (420, 405), (480, 400), (505, 410), (520, 440), (560, 470),
             (600, 480), (700, 480), (741, 470), (741, 500)],
            [(741, 0), (741, 470), (700, 470), (688, 400), (682, 340), (676, 322), (664, 304), (650, 294), (636, 286),
             (602, 270), (585, 264), (565, 215), (562, 195), (575, 160), (587, 148), (587, 110), (560, 100), (530, 95),
             (528, 0)],
            [(325, 0), (528, 0), (510, 45), (485, 48), (485, 110), (466, 115), (440, 125), (410, 128), (392, 122), (370, 115),
             (330, 112)],
            [(482, 290), (500, 292), (508, 340), (503, 392), (485, 396), (480, 340)],
            # The shelf post left of the grip, under the mirror.
            [(326, 143), (348, 143), (352, 160), (348, 180), (338, 192), (326, 192)],
            # The shelf's edge and the junk on it, beside the gauges and the right signal.
            [(547, 106), (586, 106), (586, 116), (556, 118)],
            [(438, 116), (468, 111), (470, 124), (440, 128)],
            # The wall seen between the tank, the engine and the fork.
            [(476, 240), (494, 236), (499, 262), (497, 276), (480, 276), (473, 258)],
            # Between the fork tubes.
            [(512, 222), (548, 222), (566, 256), (560, 264), (528, 264), (518, 245)],
        ],
        "holes": True,
    },
    "boats": {
        # All the rowing boats on the shore; not the plank between them, the posts in the
        # water or the pebbles.
        "rect": (0, 340, 1264, 750),
        "fg": [
            [(60, 620), (150, 540), (300, 450), (340, 440), (330, 480), (200, 580), (80, 680)],
            [(62, 612), (85, 578), (112, 548), (122, 560), (90, 605), (68, 630)],
            [(20, 470), (100, 430), (180, 420), (150, 460), (40, 510)],
            [(420, 420), (480, 410), (520, 460), (500, 540), (460, 510), (420, 460)],
            [(580, 410), (640, 420), (740, 480), (720, 520), (620, 480), (570, 440)],
            [(650, 400), (760, 420), (920, 460), (880, 500), (700, 430)],
            [(830, 400), (1000, 420), (1120, 460), (1080, 490), (950, 460), (840, 420)],
            [(1020, 380), (1150, 390), (1240, 430), (1200, 470), (1100, 420)],
        ],
        "bg": [
            [(0, 340), (1264, 340), (1264, 345), (1100, 355), (1000, 365), (800, 375), (560, 380), (400, 385), (280, 395),
             (200, 400), (60, 405), (0, 410)],
            [(95, 790), (110, 748), (175, 705), (262, 640), (345, 548), (362, 548), (372, 610), (540, 612), (770, 578),
             (950, 548), (1264, 505), (1264, 790)],
            # Pebbles in the shadow of the hulls.
            [(112, 748), (118, 724), (152, 680), (228, 633), (303, 589), (364, 539), (372, 520), (372, 600), (300, 660),
             (200, 740), (180, 790), (120, 790)],
            [(398, 502), (408, 518), (428, 531), (465, 553), (486, 578), (498, 606), (470, 610), (420, 605), (400, 590), (395, 540)],
            # Water between the boats.
            [(0, 552), (40, 536), (90, 512), (105, 515), (70, 560), (45, 588), (22, 615), (0, 628)],
            [(378, 405), (395, 400), (398, 455), (382, 458)],
            [(538, 432), (550, 428), (565, 460), (590, 480), (640, 518), (680, 540), (600, 560), (545, 560), (536, 520)],
        ],
        "fg_lines": [(5, [(500, 555), (507, 596)])],
        "bg_lines": [(12, [(378, 470), (388, 595)])],
    },
    "pagoda": {
        # The tower, down to where the trees in front hide it.
        "rect": (55, 20, 380, 400),
        "fg": [
            [(200, 55), (212, 55), (218, 72), (245, 90), (285, 107), (290, 125), (120, 125), (132, 102), (163, 88), (190, 72)],
            [(125, 130), (290, 130), (290, 165), (125, 165)],
            [(90, 170), (320, 170), (320, 182), (90, 182)],
            [(105, 190), (315, 190), (315, 245), (105, 245)],
            [(70, 260), (340, 260), (340, 320), (80, 330)],
            [(220, 360), (330, 345), (360, 340), (310, 380), (230, 380)],
        ],
        "bg": [
            # The sky along the top roof's slopes.
            [(55, 20), (190, 20), (188, 48), (184, 62), (158, 78), (126, 94), (98, 100), (55, 104)],
            [(225, 20), (380, 20), (380, 112), (330, 112), (316, 110), (284, 96), (252, 80), (230, 62), (222, 48)],
            # Haze between the tiers of roofs.
            [(60, 130), (112, 132), (108, 158), (60, 160)],
            [(40, 186), (95, 190), (98, 240), (40, 245)],
            [(300, 130), (340, 130), (340, 160), (318, 160)],
            [(322, 186), (360, 186), (360, 242), (330, 244)],
            [(0, 345), (55, 345), (110, 350), (160, 352), (195, 365), (205, 395), (225, 392), (300, 390), (318, 385),
             (330, 427), (0, 427)],
            [(350, 0), (640, 0), (640, 427), (330, 427), (320, 400), (375, 380), (378, 330), (356, 290), (356, 240),
             (336, 200), (336, 120)],
        ],
    },
}


# Reference masks of single objects and of their neighbours, for the removal
# yardstick (removal-quality.fixture.ts, `pnpm quality`): written to
# fixtures/objects/NAME.png. Each names its photo; "from_matte" cuts one object
# out of a photo's matte by a hand-drawn polygon ("within") where two touch.
MESSI5_BALL = ellipse((362, 313), (24, 23), 0)
OBJECTS = {
 "messi5-player": {
   "photo": "messi5",
   "rect": (62, 55, 470, 342),
   "fg_lines": [
     (5, [(80, 94), (120, 108), (160, 122)]),
     (5, [(300, 140), (330, 152), (365, 163)]),
     (14, [(235, 80), (232, 110)]),
     (30, [(200, 135), (270, 140), (255, 215)]),
     (16, [(250, 235), (310, 245), (360, 250), (400, 262), (430, 270)]),
     (12, [(240, 250), (232, 285), (250, 300), (280, 318)]),
   ],
   # The ball, a little widened, and the grass right of his boot: the white pitch line leads GrabCut to the ball.
   "bg": [ellipse((362, 313), (26, 25), 0), [(315, 318), (400, 318), (460, 300), (548, 300), (548, 342), (315, 342)]],
   # His boots, gold and white like the grass's highlights and the pitch line, traced by hand.
   "add": [[(423, 262), (440, 262), (452, 268), (457, 278), (452, 288), (440, 286), (430, 280)],
           [(252, 324), (267, 318), (300, 319), (308, 325), (305, 334), (262, 336), (253, 331)]],
   "bg_lines": [(3, [(62, 120), (150, 190), (180, 300), (230, 342)])],
 },
 # The ball is round: its outline fitted by hand.
 "messi5-ball": {"photo": "messi5", "fg": [MESSI5_BALL], "bg_outside": [MESSI5_BALL], "iterations": 1},
 "basketball-left": {
   "photo": "basketball",
   "rect": (30, 78, 170, 480),
   "fg_lines": [
     (22, [(85, 100), (85, 130)]),
     (40, [(90, 160), (88, 270)]),
     (12, [(75, 300), (70, 360), (62, 460)]),
     (12, [(110, 300), (115, 380), (128, 455)]),
     (6, [(100, 205), (125, 180), (140, 160)]),
     (8, [(118, 458), (148, 465)]),
     (6, [(48, 474), (75, 477)]),
   ],
   "bg": [ellipse((152, 124), (29, 31), 0)],
 },
 "basketball-right": {
   "photo": "basketball",
   "rect": (430, 20, 640, 480),
   "fg_lines": [
     (40, [(550, 60), (555, 110)]),
     (60, [(570, 180), (575, 400)]),
     (14, [(520, 210), (510, 280), (470, 250)]),
     (40, [(550, 440), (590, 470)]),
     (16, [(560, 470), (630, 470)]),
   ],
   # The chair and stool in front of his legs, left of his shirt.
   "bg": [[(430, 282), (468, 292), (498, 330), (496, 400), (484, 480), (430, 480)]],
 },
 # The boats' own matte split along the front boat's near gunwale, where the two touch.
 "boats-left": {"photo": "boats", "from_matte": "boats",
   "within": [(0, 395), (215, 395), (215, 450), (205, 462), (195, 462), (150, 487), (107, 515), (60, 545), (0, 560)]},
 "boats-front": {"photo": "boats", "from_matte": "boats",
   "within": [(0, 560), (60, 545), (107, 515), (150, 487), (195, 462), (215, 450), (215, 395), (385, 395), (385, 790), (0, 790)]},
}


def polygon_mask(shape, polygons):
    mask = np.zeros(shape[:2], np.uint8)
    for polygon in polygons:
        cv2.fillPoly(mask, [np.array(polygon, np.int32)], 1)
    return mask


def line_mask(shape, lines):
    mask = np.zeros(shape[:2], np.uint8)
    for width, points in lines:
        cv2.polylines(mask, [np.array(points, np.int32)], False, 1, width)
    return mask


def make_matte(image, hints):
    height, width = image.shape[:2]
    if "saucer" in hints:
        hints = {**hints, "add": [*hints.get("add", []), snapped_ellipse(image, *hints["saucer"])]}
    mask = np.full((height, width), cv2.GC_PR_FGD, np.uint8)
    if "rect" in hints:
        x0, y0, x1, y1 = hints["rect"]
        mask[:] = cv2.GC_BGD
        mask[y0:y1, x0:x1] = cv2.GC_PR_FGD
    mask[polygon_mask(image.shape, hints.get("pr_bg", [])) == 1] = cv2.GC_PR_BGD
    mask[polygon_mask(image.shape, hints.get("bg", [])) == 1] = cv2.GC_BGD
    if "bg_outside" in hints:
        mask[polygon_mask(image.shape, hints["bg_outside"]) == 0] = cv2.GC_BGD
    mask[line_mask(image.shape, hints.get("bg_lines", [])) == 1] = cv2.GC_BGD
    sure = polygon_mask(image.shape, hints.get("fg", [])) | line_mask(image.shape, hints.get("fg_lines", []))
    mask[sure == 1] = cv2.GC_FGD
    cv2.setRNGSeed(0)  # GrabCut's k-means start: the same matte on every run
    background_model = np.zeros((1, 65), np.float64)
    foreground_model = np.zeros((1, 65), np.float64)
    cv2.grabCut(image, mask, None, background_model, foreground_model, hints.get("iterations", 10), cv2.GC_INIT_WITH_MASK)
    matte = np.isin(mask, (cv2.GC_FGD, cv2.GC_PR_FGD)).astype(np.uint8)
    matte[polygon_mask(image.shape, hints.get("cut", [])) == 1] = 0
    matte[polygon_mask(image.shape, hints.get("add", [])) == 1] = 1
    matte[line_mask(image.shape, hints.get("add_lines", [])) == 1] = 1
    # Only what is connected to a sure-subject hint: GrabCut leaves specks elsewhere.
    count, labels = cv2.connectedComponents(matte, connectivity=8)
    added = polygon_mask(image.shape, hints.get("add", [])) | line_mask(image.shape, hints.get("add_lines", []))
    keep = np.unique(labels[((sure == 1) | (added == 1)) & (matte == 1)])
    matte = np.isin(labels, keep[keep > 0]).astype(np.uint8)
    if not hints.get("holes", False):
        background = (1 - matte).astype(np.uint8)
        count, labels = cv2.connectedComponents(background, connectivity=4)
        border = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
        matte = (~np.isin(labels, border[border > 0]) | (matte == 1)).astype(np.uint8)
    return matte * 255


def preview(image, matte):
    height, width = image.shape[:2]
    yy, xx = np.mgrid[0:height, 0:width]
    checker = np.where(((yy // 12) + (xx // 12)) % 2 == 0, 200, 120).astype(np.uint8)
    alpha = (matte > 127)[:, :, None]
    cut = np.where(alpha, image, np.dstack([checker, checker // 2, checker]))
    outline = image.copy()
    contours, _ = cv2.findContours((matte > 127).astype(np.uint8), cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    cv2.drawContours(outline, contours, -1, (0, 255, 0), 1)
    both = np.hstack([outline, np.full((height, 6, 3), 255, np.uint8), cut])
    scale = max(1, 1400 // both.shape[1])
    return cv2.resize(both, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST)


def make_object(name, hints, preview_directory):
    image = cv2.imread(os.path.join(FIXTURES, f"{hints['photo']}.jpg"), cv2.IMREAD_COLOR)
    if "from_matte" in hints:
        whole = cv2.imread(os.path.join(FIXTURES, "mattes", f"{hints['from_matte']}.png"), cv2.IMREAD_GRAYSCALE)
        within = polygon_mask(image.shape, [hints["within"]])
        matte = np.where((whole > 127) & (within == 1), 255, 0).astype(np.uint8)
    else:
        matte = make_matte(image, hints)
    cv2.imwrite(os.path.join(FIXTURES, "objects", f"{name}.png"), matte)
    if preview_directory:
        os.makedirs(preview_directory, exist_ok=True)
        cv2.imwrite(os.path.join(preview_directory, f"{name}.png"), preview(image, matte))
    print(f"{name}: {100 * np.count_nonzero(matte) / matte.size:.1f}% of {hints['photo']}.jpg")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preview")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    names = args.names or sorted(HINTS) + sorted(OBJECTS)
    os.makedirs(os.path.join(FIXTURES, "mattes"), exist_ok=True)
    os.makedirs(os.path.join(FIXTURES, "objects"), exist_ok=True)
    for name in names:
        if name in OBJECTS:
            make_object(name, OBJECTS[name], args.preview)
            continue
        image = cv2.imread(os.path.join(FIXTURES, f"{name}.jpg"), cv2.IMREAD_COLOR)
        if image is None:
            sys.exit(f"missing fixture {name}.jpg")
        matte = make_matte(image, HINTS[name])
        cv2.imwrite(os.path.join(FIXTURES, "mattes", f"{name}.png"), matte)
        if args.preview:
            os.makedirs(args.preview, exist_ok=True)
            cv2.imwrite(os.path.join(args.preview, f"{name}.png"), preview(image, matte))
        print(f"{name}: subject {100 * np.count_nonzero(matte) / matte.size:.1f}% of the picture")


if __name__ == "__main__":
    main()
